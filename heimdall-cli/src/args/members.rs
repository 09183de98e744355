//! `heimdall member`.

use clap::{Subcommand, ValueEnum};
use heimdall_wire::Role;

/// A member's id or email.
pub type MemberRef = String;

#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// List members
    List,
    /// Add a member; prints their first API token, once
    Add {
        /// The new member's email (identity is the member id it gets)
        email: String,
        /// Their role
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Show one member (by id or email)
    Show {
        /// The member's id or email
        member: MemberRef,
    },
    /// Change a member's role
    SetRole {
        /// The member's id or email
        member: MemberRef,
        /// Their role
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Remove a member and revoke their tokens
    Remove {
        /// The member's id or email
        member: MemberRef,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    Owner,
    Admin,
    Member,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Owner => Role::Owner,
            RoleArg::Admin => Role::Admin,
            RoleArg::Member => Role::Member,
        }
    }
}
