//! `--wait` and `--timeout`, for commands that queue a job.

use std::time::Duration;

use clap::Args;

/// `--wait` and `--timeout`, for commands that queue a job.
#[derive(Clone, Copy, Debug, Args)]
pub struct WaitArgs {
    /// Wait until the Resource settles (provisioned, failed, deleted, pending approval, …);
    /// exits 1 if it failed
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this long, e.g. 30s, 10m, 1h30m
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration, requires = "wait")]
    pub timeout: Duration,
}

/// `30s`, `10m`, `1h30m`, `500ms`, or plain seconds (`90`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "expected a duration such as 30s, 10m or 1h30m";
    let text = text.trim();
    if text.is_empty() {
        return Err(EXPECTED.to_owned());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(EXPECTED.to_owned());
        }
        let amount: u64 = rest[..digits].parse().map_err(|_| EXPECTED.to_owned())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" | "sec" | "secs" => Duration::from_secs(1),
            "m" | "min" | "mins" => Duration::from_secs(60),
            "h" | "hr" | "hrs" => Duration::from_secs(3600),
            _ => return Err(EXPECTED.to_owned()),
        };
        rest = &rest[unit_len..];
        let part = u32::try_from(amount).ok().and_then(|n| unit.checked_mul(n)).ok_or("duration too long")?;
        total = total.checked_add(part).ok_or("duration too long")?;
    }
    if total.is_zero() {
        return Err("the duration must be more than zero".to_owned());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(s).unwrap();
        assert_eq!(d("30s"), Duration::from_secs(30));
        assert_eq!(d("10m"), Duration::from_secs(600));
        assert_eq!(d("1h30m"), Duration::from_secs(5400));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("90"), Duration::from_secs(90));
        assert_eq!(d(" 2min "), Duration::from_secs(120));
        for bad in ["", "m", "10x", "ten minutes", "-5s", "0s", "1.5m", "99999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
