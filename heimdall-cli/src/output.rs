//! Printing: tables (tabwriter, two spaces between columns, UPPERCASE
//! headers), `key  value` blocks for one record, `✓ …` lines for changes,
//! or pretty JSON for `--output json`. Errors go to stderr.

use std::io::{self, Write};

use serde::Serialize;
use tabwriter::TabWriter;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

use crate::args::OutputFormat;
use crate::error::{CliError, Result};

#[derive(Clone, Copy, Debug)]
pub struct Out {
    pub format: OutputFormat,
}

impl Out {
    pub fn new(format: OutputFormat) -> Self {
        Self { format }
    }

    pub fn is_json(&self) -> bool {
        self.format == OutputFormat::Json
    }

    /// A list: a table, or a JSON array.
    pub fn list<T: Serialize>(
        &self,
        items: &[T],
        headers: &[&str],
        row: impl Fn(&T) -> Vec<String>,
    ) -> Result<()> {
        if self.is_json() {
            return json(items);
        }
        table(headers, items.iter().map(row))
    }

    /// One record: `KEY  value` lines, or the JSON object.
    pub fn record<T: Serialize + ?Sized>(&self, value: &T, fields: &[(&str, String)]) -> Result<()> {
        if self.is_json() {
            return json(value);
        }
        let mut tw = TabWriter::new(Vec::new()).padding(2);
        for (key, value) in fields {
            writeln!(tw, "{key}\t{}", cell(value))?;
        }
        write_stdout(&finish(tw)?)
    }

    /// A change was made: `✓ {line}` (plus `extra` lines), or the JSON of
    /// what the API returned.
    pub fn done<T: Serialize + ?Sized>(&self, value: &T, line: &str, extra: &[String]) -> Result<()> {
        if self.is_json() {
            return json(value);
        }
        let mut text = format!("✓ {line}\n");
        for more in extra {
            text.push_str(more);
            text.push('\n');
        }
        write_stdout(text.as_bytes())
    }

    /// A table after a record (e.g. a Resource's revisions), preceded by a
    /// blank line; table mode only (the JSON record already holds the rows).
    pub fn section(&self, headers: &[&str], rows: Vec<Vec<String>>) -> Result<()> {
        if self.is_json() {
            return Ok(());
        }
        write_stdout(b"\n")?;
        table(headers, rows.into_iter())
    }

    /// Free text on stdout in table mode only (e.g. a policy's text after
    /// its fields).
    pub fn text(&self, text: &str) -> Result<()> {
        if self.is_json() {
            return Ok(());
        }
        write_stdout(text.as_bytes())
    }
}

/// Pretty JSON and a newline on stdout.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|err| CliError::local(format!("cannot render JSON: {err}")))?;
    text.push('\n');
    write_stdout(text.as_bytes())
}

fn table(headers: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<()> {
    let mut tw = TabWriter::new(Vec::new()).padding(2);
    writeln!(tw, "{}", headers.join("\t"))?;
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        writeln!(tw, "{}", cells.join("\t"))?;
    }
    write_stdout(&finish(tw)?)
}

fn finish(tw: TabWriter<Vec<u8>>) -> Result<Vec<u8>> {
    tw.into_inner().map_err(|err| CliError::local(format!("cannot lay out the table: {err}")))
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}

/// A table cell: one line, no tabs, `-` when empty.
pub fn cell(value: &str) -> String {
    if value.trim().is_empty() {
        return "-".to_owned();
    }
    value.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// At most `max` characters: longer text is cut and ends with `…`.
pub fn truncate(value: &str, max: usize) -> String {
    if value.chars().count() <= max {
        return value.to_owned();
    }
    let mut cut: String = value.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// RFC 3339, UTC, to the second: `2025-01-31T12:00:00Z`.
pub fn timestamp(at: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    at.to_offset(UtcOffset::UTC).format(&format).unwrap_or_else(|_| at.unix_timestamp().to_string())
}

pub fn optional_timestamp(at: Option<OffsetDateTime>) -> String {
    at.map(timestamp).unwrap_or_default()
}

/// `error: CODE: message` (or `{"error":{…}}` in JSON mode) on stderr.
pub fn print_error(err: &CliError, format: OutputFormat) {
    let text = if format == OutputFormat::Json {
        let body = match err.api_error() {
            Some(api) => serde_json::json!({ "error": api }),
            None => serde_json::json!({ "error": { "message": err.to_string() } }),
        };
        serde_json::to_string_pretty(&body).unwrap_or_else(|_| err.to_string())
    } else {
        let mut text = format!("error: {err}");
        if let Some(fields) = err.api_error().and_then(|api| api.fields.as_ref()) {
            for field in fields {
                text.push_str(&format!(
                    "\n  {}: {}",
                    if field.path.is_empty() { "/" } else { &field.path },
                    field.rule
                ));
            }
        }
        text
    };
    eprintln!("{text}");
}

/// A warning on stderr (table mode only; JSON consumers read the data).
pub fn warn(out: &Out, message: &str) {
    if !out.is_json() {
        eprintln!("warning: {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_to_the_second() {
        let at = time::macros::datetime!(2025-01-31 13:04:05.678 +01:00);
        assert_eq!(timestamp(at), "2025-01-31T12:04:05Z");
    }

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate("short", 60), "short");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("ñññññ", 5), "ñññññ");
        assert_eq!(truncate("ñññññ", 3), "ññ…");
    }

    #[test]
    fn cells_stay_on_one_line() {
        assert_eq!(cell(""), "-");
        assert_eq!(cell("a\tb\nc"), "a b c");
    }
}
