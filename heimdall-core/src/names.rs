//! Names people choose (domains, systems, environments, …) and emails.
//!
//! Names appear in URLs, Terraform state keys and CLI tables, so they are
//! kept boring: lowercase ASCII letters, digits, `-` and `_`, starting with a
//! letter or digit, at most 63 characters.

use crate::error::ApiError;

pub const MAX_NAME_LEN: usize = 63;

/// Checks a name; the error names the rule, never echoes the input.
pub fn validate_name(field: &str, name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::invalid_input(format!("{field} must not be empty")));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(ApiError::invalid_input(format!("{field} must be at most {MAX_NAME_LEN} characters")));
    }
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !first_ok || !rest_ok {
        return Err(ApiError::invalid_input(format!(
            "{field} may contain only lowercase letters, digits, '-' and '_', and must start with a letter or digit"
        )));
    }
    Ok(())
}

/// A deliberately small email check: one `@`, something on each side, a dot
/// in the domain, no whitespace, at most 254 characters. Returns the address
/// lowercased so that lookups are case-insensitive.
pub fn normalize_email(email: &str) -> Result<String, ApiError> {
    let email = email.trim();
    let invalid = || ApiError::invalid_input("email must look like name@example.com");
    if email.len() > 254 || email.chars().any(char::is_whitespace) {
        return Err(invalid());
    }
    let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
    // `localhost` is allowed as the one dotless domain, for `heimdall dev`.
    let domain_ok =
        domain == "localhost" || (domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.'));
    if local.is_empty() || domain.contains('@') || !domain_ok {
        return Err(invalid());
    }
    Ok(email.to_ascii_lowercase())
}

/// A cloud region as providers spell them: lowercase letters, digits, `-`.
pub fn validate_region(region: &str) -> Result<(), ApiError> {
    let ok = !region.is_empty()
        && region.len() <= 32
        && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input("region may contain only lowercase letters, digits and '-'"))
    }
}

/// Free text (descriptions, policy names): bounded, no control characters.
pub fn validate_text(field: &str, text: &str, max: usize) -> Result<(), ApiError> {
    if text.chars().count() > max {
        return Err(ApiError::invalid_input(format!("{field} must be at most {max} characters")));
    }
    if text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(ApiError::invalid_input(format!("{field} must not contain control characters")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["checkout", "prod", "a", "team-2_x", "0day"] {
            assert!(validate_name("name", ok).is_ok(), "{ok}");
        }
        for bad in ["", "Checkout", "-x", "has space", "ünï", &"x".repeat(64), "a/b"] {
            let err = validate_name("name", bad).unwrap_err();
            assert!(!err.message.contains(bad) || bad.is_empty(), "echoed input: {}", err.message);
        }
    }

    #[test]
    fn emails() {
        assert_eq!(normalize_email(" Ana@Example.COM ").unwrap(), "ana@example.com");
        assert_eq!(normalize_email("dev@localhost").unwrap(), "dev@localhost");
        for bad in ["", "ana", "@x.com", "ana@", "ana@@x.com", "a b@x.com", "ana@example"] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
    }
}
