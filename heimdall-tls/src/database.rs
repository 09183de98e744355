//! What a database's refusal of a connection means for its operator. The
//! drivers say `UnknownIssuer` or quote `pg_hba.conf`; the operator needs
//! the setting that fixes it. Shared by the API's database, the Agent's
//! store and the rotation's admin connection, so that all three explain a
//! TLS failure the same way.

/// Why a connection failed, with the fix first when it is a TLS matter.
/// `reason` is the driver's text (which names host and user, never the
/// password); `tls_setting` is how this connection asks for verified TLS
/// (`sslmode=verify-full&sslrootcert=…` in a URL, `--tls verify-full
/// --ca-file` for a registered database).
pub fn explain(reason: &str, tls_setting: &str) -> String {
    let hint = if reason.contains("UnknownIssuer") || reason.contains("BadSignature") {
        Some(format!(
            "the server's certificate is not signed by the CA given ({tls_setting}), nor by the system's roots"
        ))
    } else if reason.contains("NotValidForName") {
        Some("the server's certificate does not name the host this connection dials".to_owned())
    } else if reason.contains("no encryption") || reason.contains("require_secure_transport") {
        Some(format!("the server accepts TLS connections only: ask for it with {tls_setting}"))
    } else if reason.contains("does not support TLS") || reason.contains("not support SSL") {
        Some(format!("the server offers no TLS, and this connection requires it ({tls_setting})"))
    } else {
        None
    };
    match hint {
        Some(hint) => format!("{hint} ({reason})"),
        None => reason.to_owned(),
    }
}

/// A database holds migration `applied`, which this binary (knowing
/// migrations up to `known`) does not have: a newer Heimdall migrated it.
/// Starting would serve a schema this binary does not understand.
pub fn newer_schema(applied: i64, known: i64) -> String {
    format!(
        "this database was migrated by a newer Heimdall: it has migration {applied}, this binary knows \
         migrations up to {known}; run the newer version (or restore the backup taken before the upgrade)"
    )
}

/// How a PostgreSQL URL asks for verified TLS.
pub const POSTGRES_URL_TLS: &str = "sslmode=verify-full&sslrootcert=<the server's CA file> in the URL";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_failures_name_the_setting_that_fixes_them() {
        let wrong_ca = explain("error occurred while attempting to establish a TLS connection: invalid peer certificate: UnknownIssuer", POSTGRES_URL_TLS);
        assert!(
            wrong_ca.starts_with("the server's certificate is not signed by the CA given (sslmode="),
            "{wrong_ca}"
        );
        let cleartext = explain(
            "error returned from database: no pg_hba.conf entry for host \"127.0.0.1\", user \"postgres\", database \"h\", no encryption",
            POSTGRES_URL_TLS,
        );
        assert!(
            cleartext.starts_with("the server accepts TLS connections only: ask for it with sslmode="),
            "{cleartext}"
        );
        assert!(cleartext.ends_with("no encryption)"), "the driver's words stay: {cleartext}");
        assert_eq!(explain("connection refused", POSTGRES_URL_TLS), "connection refused");
    }
}
