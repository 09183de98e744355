//! Database service users whose passwords the Agent creates and rotates,
//! with a grace period (the alternating-users scheme): `app` owns the
//! grants and cannot log in; `app_a` and `app_b` are login roles that are
//! members of it. A rotation sets a new password on the inactive login,
//! stores it as the secret's new version, keeps the previous login working
//! until the grace ends, then gives that login a password nobody keeps
//! (and, on PostgreSQL, `NOLOGIN`).
//!
//! Crash safety is the order of [`Phase`]s: the new version is committed
//! to the Agent's store as *pending* before the database is changed, so a
//! crash never leaves a password only the database knows; on restart the
//! Agent reads the phase it recorded and [`resume`] says what is left.
//!
//! This module is the rules only: names, the stored value's format, the
//! schedule, the steps and their SQL. Generating passwords (randomness),
//! talking to a database and storing versions are the Agent's.
//!
//! Not wired yet: no API route, Agent loop or CLI command uses it (see the
//! README's "Not built yet").

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::error::ApiError;
use crate::redacted::Redacted;

/// The database engines a service user can live in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Postgres,
    Mariadb,
}

/// The two login roles of a service user, in the order they take turns.
pub fn logins(user: &str) -> [String; 2] {
    [format!("{user}_a"), format!("{user}_b")]
}

/// The secret that holds a service user's current credentials.
pub fn secret_name(database: &str, user: &str) -> String {
    format!("db/{database}/{user}")
}

/// A role name Heimdall creates: lowercase letters, digits and `_`,
/// starting with a letter, at most 30 characters (so `_a` fits within
/// every engine's limit); anything else is refused before any SQL is made.
pub fn check_user_name(user: &str) -> Result<(), ApiError> {
    let ok = user.len() <= 30
        && user.starts_with(|c: char| c.is_ascii_lowercase())
        && user.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_input(
            "a service user's name is 1-30 lowercase letters, digits and _, starting with a letter",
        ))
    }
}

/// What the secret's value holds (JSON): which login is current, with its
/// password and where to connect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credential {
    pub engine: Engine,
    pub username: String,
    pub password: Redacted<String>,
    pub host: String,
    pub port: u16,
    pub database: String,
}

/// A password the Agent generates: the length and alphabet it must have,
/// so that it needs no quoting in any engine's SQL.
pub const PASSWORD_LEN: usize = 40;

/// Whether `password` is one the Agent generated (alphanumeric, [`PASSWORD_LEN`]).
pub fn is_generated_password(password: &str) -> bool {
    password.len() == PASSWORD_LEN && password.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// `30d`, `12h`, `90m`: a rotation period or a grace period.
pub fn parse_period(text: &str) -> Result<Duration, ApiError> {
    let bad =
        || ApiError::invalid_input(format!("{text:?} is not a period: a number and m, h or d (e.g. 30d)"));
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: i64 = number.parse().map_err(|_| bad())?;
    let period = match unit {
        "m" => Duration::minutes(number),
        "h" => Duration::hours(number),
        "d" => Duration::days(number),
        _ => return Err(bad()),
    };
    if number <= 0 || period > Duration::days(3660) {
        return Err(bad());
    }
    Ok(period)
}

/// A user's schedule: rotate every `every`, the old login working for
/// `grace` after each rotation. The grace must be shorter than the period,
/// or two rotations would overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub every: Duration,
    pub grace: Duration,
}

impl Schedule {
    pub fn new(every: Duration, grace: Duration) -> Result<Self, ApiError> {
        if grace >= every {
            return Err(ApiError::invalid_input("--grace must be shorter than --rotate-every"));
        }
        Ok(Self { every, grace })
    }

    /// When the next rotation is due after one at `last` (now, if never).
    pub fn next_rotation(&self, last: Option<OffsetDateTime>, now: OffsetDateTime) -> OffsetDateTime {
        last.map_or(now, |last| last + self.every)
    }
}

/// Where a rotation stands, as the Agent records it before each step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// Nothing in flight; `current` (0 or 1) is the login the latest
    /// version names; `retire` the other one's grace deadline, if it still
    /// works.
    Idle { current: usize, retire_at: Option<i64> },
    /// The new password for login `next` is committed as a pending version
    /// in the Agent's store; the database may or may not have it yet.
    Pending { current: usize, next: usize, version: i64 },
    /// The database has it: the pending version is to be made current.
    Altered { current: usize, next: usize, version: i64 },
}

/// What is left to do from `phase` at `now` (Unix seconds): the steps, in
/// order, each idempotent, so a crash between two means doing it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Set the pending version's password on login `login` (it works from now).
    AlterLogin { login: usize, version: i64 },
    /// Make the pending version the current one (readers get it), record
    /// `Idle` with the old login's grace deadline.
    Activate { version: i64 },
    /// The grace is over: give login `login` a password nobody keeps (and
    /// on PostgreSQL `NOLOGIN`), deactivate the versions that name it.
    Retire { login: usize },
}

/// The steps that finish an interrupted rotation, or retire a login whose
/// grace ended. A rotation in flight is always rolled forward: its
/// password is already durable in the Agent's store.
pub fn resume(phase: &Phase, now: i64) -> Vec<Step> {
    match *phase {
        Phase::Idle { current, retire_at: Some(at) } if at <= now => {
            vec![Step::Retire { login: 1 - current }]
        }
        Phase::Idle { .. } => Vec::new(),
        Phase::Pending { next, version, .. } => {
            vec![Step::AlterLogin { login: next, version }, Step::Activate { version }]
        }
        Phase::Altered { version, .. } => vec![Step::Activate { version }],
    }
}

/// A rotation starting from `Idle { current, .. }`: the login that takes
/// the new password, and the phase to record (with the pending version's
/// number) *before* the database is changed. Refused while the other login
/// is still in its grace period: rotating onto it would cut off
/// applications that have not moved yet.
pub fn start(phase: &Phase, version: i64, now: i64) -> Result<Phase, ApiError> {
    match *phase {
        Phase::Idle { current, retire_at } => {
            if retire_at.is_some_and(|at| at > now) {
                return Err(ApiError::new(
                    crate::error::ErrorCode::Conflict,
                    "the previous login is still in its grace period; rotate once it ends",
                ));
            }
            Ok(Phase::Pending { current, next: 1 - current, version })
        }
        Phase::Pending { .. } | Phase::Altered { .. } => Err(ApiError::new(
            crate::error::ErrorCode::Conflict,
            "a rotation is already in flight; it is finished first",
        )),
    }
}

/// The phase once `Activate` ran at `now`: the new login is current, the
/// old one works until the grace ends.
pub fn activated(phase: &Phase, grace: Duration, now: i64) -> Option<Phase> {
    match *phase {
        Phase::Pending { next, .. } | Phase::Altered { next, .. } => {
            Some(Phase::Idle { current: next, retire_at: Some(now + grace.whole_seconds()) })
        }
        Phase::Idle { .. } => None,
    }
}

/// One SQL statement to run with the admin credential. Its text can hold
/// a password: it is never logged, and `Debug` shows only its kind.
pub struct Statement {
    pub kind: &'static str,
    pub sql: Redacted<String>,
}

impl std::fmt::Debug for Statement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Statement({})", self.kind)
    }
}

fn statement(kind: &'static str, sql: String) -> Statement {
    Statement { kind, sql: Redacted::new(sql) }
}

/// Creates the group role and its two logins (the first with `password`,
/// the second locked with `unused`), then `grants` to the group. Names
/// were checked by [`check_user_name`]; passwords are generated
/// ([`is_generated_password`]), so no quoting is needed for either.
pub fn create_statements(
    engine: Engine,
    user: &str,
    password: &str,
    unused: &str,
    grants: Option<&str>,
) -> Result<Vec<Statement>, ApiError> {
    check_user_name(user)?;
    if !is_generated_password(password) || !is_generated_password(unused) {
        return Err(ApiError::invalid_input("passwords are generated by the Agent"));
    }
    let [a, b] = logins(user);
    let mut out = match engine {
        Engine::Postgres => vec![
            statement("create group role", format!("CREATE ROLE \"{user}\" NOLOGIN")),
            statement(
                "create login",
                format!("CREATE ROLE \"{a}\" LOGIN PASSWORD '{password}' IN ROLE \"{user}\""),
            ),
            statement(
                "create login",
                format!("CREATE ROLE \"{b}\" NOLOGIN PASSWORD '{unused}' IN ROLE \"{user}\""),
            ),
        ],
        Engine::Mariadb => vec![
            statement("create group role", format!("CREATE ROLE `{user}`")),
            statement("create login", format!("CREATE USER `{a}`@'%' IDENTIFIED BY '{password}'")),
            statement("create login", format!("CREATE USER `{b}`@'%' IDENTIFIED BY '{unused}' ACCOUNT LOCK")),
            statement("grant group role", format!("GRANT `{user}` TO `{a}`@'%', `{b}`@'%'")),
            statement("default role", format!("SET DEFAULT ROLE `{user}` FOR `{a}`@'%'")),
            statement("default role", format!("SET DEFAULT ROLE `{user}` FOR `{b}`@'%'")),
        ],
    };
    if let Some(grants) = grants {
        out.push(statement("grant", grant_statement(engine, user, grants)?));
    }
    Ok(out)
}

/// `GRANT <privileges ON objects> TO <group>`: the privileges text is the
/// operator's (`SELECT, INSERT ON ALL TABLES IN SCHEMA public`); it may not
/// carry a statement separator or a quote.
fn grant_statement(engine: Engine, user: &str, grants: &str) -> Result<String, ApiError> {
    if grants.contains([';', '\'', '"', '`', '\\']) || grants.contains("--") || grants.contains("/*") {
        return Err(ApiError::invalid_input("--grant is privileges ON objects, without quotes or ;"));
    }
    Ok(match engine {
        Engine::Postgres => format!("GRANT {grants} TO \"{user}\""),
        Engine::Mariadb => format!("GRANT {grants} TO `{user}`"),
    })
}

/// Sets `password` on login `login` of `user` and lets it log in.
pub fn alter_statement(
    engine: Engine,
    user: &str,
    login: usize,
    password: &str,
) -> Result<Statement, ApiError> {
    check_user_name(user)?;
    if !is_generated_password(password) {
        return Err(ApiError::invalid_input("passwords are generated by the Agent"));
    }
    let name = &logins(user)[login & 1];
    Ok(match engine {
        Engine::Postgres => {
            statement("set password", format!("ALTER ROLE \"{name}\" LOGIN PASSWORD '{password}'"))
        }
        Engine::Mariadb => statement(
            "set password",
            format!("ALTER USER `{name}`@'%' IDENTIFIED BY '{password}' ACCOUNT UNLOCK"),
        ),
    })
}

/// Retires login `login` of `user`: a password nobody keeps, and no login.
pub fn retire_statement(
    engine: Engine,
    user: &str,
    login: usize,
    unused: &str,
) -> Result<Statement, ApiError> {
    check_user_name(user)?;
    if !is_generated_password(unused) {
        return Err(ApiError::invalid_input("passwords are generated by the Agent"));
    }
    let name = &logins(user)[login & 1];
    Ok(match engine {
        Engine::Postgres => {
            statement("retire login", format!("ALTER ROLE \"{name}\" NOLOGIN PASSWORD '{unused}'"))
        }
        Engine::Mariadb => statement(
            "retire login",
            format!("ALTER USER `{name}`@'%' IDENTIFIED BY '{unused}' ACCOUNT LOCK"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PW: &str = "Abcdefghij0123456789Abcdefghij0123456789";
    const UNUSED: &str = "Zyxwvutsrq9876543210Zyxwvutsrq9876543210";

    #[test]
    fn names_and_periods() {
        assert_eq!(logins("app"), ["app_a", "app_b"]);
        assert_eq!(secret_name("orders", "app"), "db/orders/app");
        for bad in ["", "App", "1app", "app-x", "a\"; DROP", &"a".repeat(31)] {
            assert!(check_user_name(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_period("30d").unwrap(), Duration::days(30));
        assert_eq!(parse_period("90m").unwrap(), Duration::minutes(90));
        for bad in ["", "0d", "30", "d", "1y", "-1h"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
        assert!(Schedule::new(Duration::hours(1), Duration::hours(1)).is_err());
        let s = Schedule::new(Duration::days(30), Duration::hours(1)).unwrap();
        let t = OffsetDateTime::UNIX_EPOCH;
        assert_eq!(s.next_rotation(None, t), t);
        assert_eq!(s.next_rotation(Some(t), t), t + Duration::days(30));
    }

    #[test]
    fn a_rotation_alternates_logins_and_survives_a_crash_at_every_step() {
        let grace = Duration::hours(1);
        let idle = Phase::Idle { current: 0, retire_at: None };
        assert!(resume(&idle, 0).is_empty());
        let pending = start(&idle, 2, 100).unwrap();
        assert_eq!(pending, Phase::Pending { current: 0, next: 1, version: 2 });
        assert!(start(&pending, 3, 100).is_err(), "one rotation at a time");
        // Killed after the store commit: the password is rolled forward.
        assert_eq!(
            resume(&pending, 100),
            [Step::AlterLogin { login: 1, version: 2 }, Step::Activate { version: 2 }]
        );
        // Killed after ALTER ROLE: only the activation is left.
        let altered = Phase::Altered { current: 0, next: 1, version: 2 };
        assert_eq!(resume(&altered, 100), [Step::Activate { version: 2 }]);
        let done = activated(&altered, grace, 100).unwrap();
        assert_eq!(done, Phase::Idle { current: 1, retire_at: Some(3700) });
        // During the grace both logins work, and no rotation starts.
        assert!(resume(&done, 3699).is_empty());
        assert!(start(&done, 3, 3699).is_err());
        // After it, the old login is retired; the next rotation goes back to it.
        assert_eq!(resume(&done, 3700), [Step::Retire { login: 0 }]);
        let next = start(&Phase::Idle { current: 1, retire_at: None }, 3, 4000).unwrap();
        assert_eq!(next, Phase::Pending { current: 1, next: 0, version: 3 });
    }

    #[test]
    fn statements_quote_nothing_they_were_not_checked_for_and_hide_passwords() {
        let made = create_statements(
            Engine::Postgres,
            "app",
            PW,
            UNUSED,
            Some("SELECT ON ALL TABLES IN SCHEMA public"),
        )
        .unwrap();
        assert_eq!(made.len(), 4);
        assert_eq!(
            made[1].sql.expose(),
            &format!("CREATE ROLE \"app_a\" LOGIN PASSWORD '{PW}' IN ROLE \"app\"")
        );
        assert!(!format!("{made:?}").contains(PW), "Debug hides the SQL");
        let maria = create_statements(Engine::Mariadb, "app", PW, UNUSED, None).unwrap();
        assert!(maria[2].sql.expose().ends_with("ACCOUNT LOCK"));
        assert!(create_statements(Engine::Postgres, "app", "short", UNUSED, None).is_err());
        assert!(create_statements(Engine::Postgres, "app", PW, UNUSED, Some("SELECT ON t; DROP TABLE t"))
            .is_err());
        let alter = alter_statement(Engine::Postgres, "app", 1, PW).unwrap();
        assert_eq!(alter.sql.expose(), &format!("ALTER ROLE \"app_b\" LOGIN PASSWORD '{PW}'"));
        let retire = retire_statement(Engine::Mariadb, "app", 0, UNUSED).unwrap();
        assert_eq!(
            retire.sql.expose(),
            &format!("ALTER USER `app_a`@'%' IDENTIFIED BY '{UNUSED}' ACCOUNT LOCK")
        );
    }

    #[test]
    fn the_stored_value_is_documented_json() {
        let value = Credential {
            engine: Engine::Postgres,
            username: "app_b".into(),
            password: Redacted::new(PW.into()),
            host: "127.0.0.1".into(),
            port: 5432,
            database: "orders".into(),
        };
        let json = serde_json::to_value(&value).unwrap();
        assert_eq!(json["username"], "app_b");
        assert_eq!(json["password"], PW, "the value itself carries the password");
        assert!(!format!("{value:?}").contains(PW));
        let back: Credential = serde_json::from_value(json).unwrap();
        assert_eq!(back, value);
    }
}
