//! Both servers' logs on stderr: the filter from `HEIMDALL_LOG` (default
//! `info`), one JSON object per line with `HEIMDALL_LOG_FORMAT=json`, and
//! terminal colours only when stderr is a terminal and `NO_COLOR` is unset
//! (a log file gets plain text).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::LogFormatError;

/// Whether log lines are JSON, from `HEIMDALL_LOG_FORMAT` (`text` or `json`).
pub fn json_format(value: Option<&str>) -> Result<bool, LogFormatError> {
    match value.map(str::trim) {
        None | Some("") | Some("text") => Ok(false),
        Some("json") => Ok(true),
        Some(other) => Err(LogFormatError(other.to_owned())),
    }
}

/// Installs the subscriber; a bad `HEIMDALL_LOG_FORMAT` is an error before anything runs.
pub fn init() -> Result<(), LogFormatError> {
    let filter = EnvFilter::try_from_env("HEIMDALL_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let json = json_format(std::env::var("HEIMDALL_LOG_FORMAT").ok().as_deref())?;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colour);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_format_is_text_or_json() {
        assert_eq!(super::json_format(None), Ok(false));
        assert_eq!(super::json_format(Some("json")), Ok(true));
        assert!(super::json_format(Some("yaml")).is_err_and(|e| e.to_string().contains("text or json")));
    }
}
