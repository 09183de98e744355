//! `heimdall database`.

use clap::{Subcommand, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    Postgres,
    Mariadb,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TlsArg {
    /// TLS, the server's certificate checked (system roots and --ca-file) and its name against --host
    VerifyFull,
    /// No TLS: only for a database on the Agent's own machine (localhost, 127.0.0.1, ::1)
    Disable,
}

#[derive(Debug, Subcommand)]
pub enum DatabaseCommand {
    /// Register a database whose service users the Agent creates and rotates
    /// (owner, admin). Set the admin secret's value first, with `secret set`:
    /// {"username":"…","password":"…"}
    Create {
        /// The database's name in Heimdall
        name: String,
        /// The database engine
        #[arg(long, value_enum)]
        engine: EngineArg,
        /// Where the database listens (a host name or an address)
        #[arg(long)]
        host: String,
        /// Default: 5432 for postgres, 3306 for mariadb
        #[arg(long)]
        port: Option<u16>,
        /// The database (on MariaDB, the schema) applications connect to
        #[arg(long = "database", value_name = "NAME")]
        database: String,
        /// The environment whose Agents run the statements (name or id)
        #[arg(long)]
        environment: String,
        /// The secret holding the admin credential; you must be able to read
        /// it in that environment: the Agent uses it on your behalf
        #[arg(long, value_name = "SECRET")]
        admin_secret: String,
        /// How the Agent's admin connection is secured. Default: disable for
        /// localhost, 127.0.0.1 and ::1; verify-full for any other host
        #[arg(long, value_enum)]
        tls: Option<TlsArg>,
        /// CA certificates (PEM) the server's certificate may chain to,
        /// besides the system's roots (e.g. a managed database's CA bundle)
        #[arg(long, value_name = "FILE")]
        ca_file: Option<std::path::PathBuf>,
    },
    /// Change where a database is, its admin connection's TLS or its admin secret (checked as at creation)
    Update {
        /// The database's name in Heimdall
        name: String,
        /// Where the database listens (a host name or an address)
        #[arg(long)]
        host: Option<String>,
        /// The port
        #[arg(long)]
        port: Option<u16>,
        /// How the Agent's admin connection is secured
        #[arg(long, value_enum)]
        tls: Option<TlsArg>,
        /// CA certificates (PEM) the server's certificate may chain to
        #[arg(long, value_name = "FILE", conflicts_with = "no_ca")]
        ca_file: Option<std::path::PathBuf>,
        /// Remove the CA certificates given before (the system's roots only)
        #[arg(long)]
        no_ca: bool,
        /// The secret holding the admin credential; you must be able to read it there
        #[arg(long, value_name = "SECRET")]
        admin_secret: Option<String>,
    },
    /// Delete a database that has no service users (nothing on the server is touched)
    Delete {
        /// The database's name in Heimdall
        name: String,
    },
    /// List the databases
    List,
    /// Service users: created and rotated by the Agent, never typed
    #[command(subcommand)]
    User(DatabaseUserCommand),
}

#[derive(Debug, Subcommand)]
pub enum DatabaseUserCommand {
    /// Create a service user; the Agent makes its logins and password and
    /// stores them as secret db-<database>-<user>
    Create {
        /// Lowercase letters, digits and _ (the logins are <user>_a and <user>_b)
        user: String,
        /// The database's name in Heimdall
        #[arg(long = "database", value_name = "DATABASE")]
        database: String,
        /// e.g. 30d, 12h, 90m
        #[arg(long, value_name = "PERIOD")]
        rotate_every: String,
        /// How long the previous login keeps working after a rotation
        #[arg(long, value_name = "PERIOD")]
        grace: String,
        /// Privileges granted to the user, e.g. 'SELECT, INSERT ON ALL TABLES IN SCHEMA public'
        #[arg(long, value_name = "PRIVILEGES ON OBJECTS")]
        grant: Option<String>,
    },
    /// List a database's service users with their versions and schedule
    List {
        /// The database's name in Heimdall
        #[arg(long = "database", value_name = "DATABASE")]
        database: String,
    },
    /// One service user: current version, last and next rotation, grace deadline
    Show {
        /// The service user's name
        user: String,
        /// The database's name in Heimdall
        #[arg(long = "database", value_name = "DATABASE")]
        database: String,
    },
    /// Rotate now (at the Agent's next poll) instead of on schedule
    Rotate {
        /// The service user's name
        user: String,
        /// The database's name in Heimdall
        #[arg(long = "database", value_name = "DATABASE")]
        database: String,
    },
    /// Delete a service user: no more rotations; after the grace the Agent
    /// drops both logins, then its secret is deleted
    Delete {
        /// The service user's name
        user: String,
        /// The database's name in Heimdall
        #[arg(long = "database", value_name = "DATABASE")]
        database: String,
        /// How long the current login keeps working (default: the user's grace), e.g. 1h
        #[arg(long, value_name = "PERIOD")]
        grace: Option<String>,
    },
}
