//! `heimdall dev`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;

use crate::error::CliError;

#[derive(Debug, Args)]
#[command(after_help = "The Agent is enrolled once, the first time: its Terraform (pinned by SHA-256) and \
its allowed modules are then in DIR/agent/agent.toml; remove DIR/agent to enroll it again.")]
pub struct DevArgs {
    /// Where the database, the owner's token, the Agent, Terraform state and the logs live
    #[arg(long, value_name = "DIR", default_value = "./.heimdall-dev")]
    pub data: PathBuf,
    /// Address for the API to listen on; Agents dial the port after it
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7480")]
    pub listen: SocketAddr,
    /// The terraform executable for the Agent [env: HEIMDALL_TERRAFORM] (default:
    /// ./.venv/bin/terraform, else terraform on PATH; none: the API runs without an Agent)
    #[arg(long, value_name = "PATH")]
    pub terraform: Option<PathBuf>,
    /// A module source the Agent may run, as a glob; repeatable [default: <current directory>/**,
    /// every local module under the directory `heimdall dev` runs in]
    #[arg(long = "allow-module", value_name = "GLOB")]
    pub allow_modules: Vec<String>,
    /// Serve Prometheus metrics (plain HTTP): the API's on the third port after --listen's, the
    /// Agent's on the fourth
    #[arg(long)]
    pub metrics: bool,
}

/// Where `heimdall dev` puts each of its three servers, from `--listen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevAddresses {
    pub api: SocketAddr,
    /// The Agent channel (mTLS): the port after the API's.
    pub agent_channel: SocketAddr,
    /// The Agent's local API: the port after that.
    pub local_api: SocketAddr,
    /// With `--metrics`: the API's `/metrics`, then the Agent's.
    pub metrics: Option<(SocketAddr, SocketAddr)>,
}

impl DevArgs {
    /// `--listen` validated: it needs a port with room for the two after it.
    pub fn addresses(&self) -> crate::error::Result<DevAddresses> {
        let listen = self.listen;
        let after = |n| listen.port().checked_add(n).map(|port| SocketAddr::new(listen.ip(), port));
        // Metrics are plain HTTP: on loopback only, whatever --listen says.
        let loopback = |n| after(n).map(|a| SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), a.port()));
        let metrics = match (self.metrics, loopback(3), loopback(4)) {
            (false, ..) => None,
            (true, Some(api), Some(agent)) => Some((api, agent)),
            (true, ..) => {
                return Err(CliError::usage("--metrics needs the fourth port after --listen's free"))
            }
        };
        match (listen.port(), after(1), after(2)) {
            (0, ..) => Err(CliError::usage("--listen needs a port (the Agent takes the two after it)")),
            (_, Some(agent_channel), Some(local_api)) => {
                Ok(DevAddresses { api: listen, agent_channel, local_api, metrics })
            }
            _ => Err(CliError::usage("--listen's port must leave room for the Agent's two after it")),
        }
    }
}

/// Where a client reaches a server listening on `addr`.
pub fn client_addr(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port()),
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_leaves_room_for_the_agent() {
        let args = |listen: &str| DevArgs {
            data: PathBuf::new(),
            listen: listen.parse().unwrap(),
            terraform: None,
            allow_modules: Vec::new(),
            metrics: false,
        };
        let ports = |listen: &str| {
            let a = args(listen).addresses().ok()?;
            Some([a.api, a.agent_channel, a.local_api].map(|a| a.to_string()))
        };
        assert_eq!(
            ports("127.0.0.1:7480"),
            Some(["127.0.0.1:7480", "127.0.0.1:7481", "127.0.0.1:7482"].map(String::from))
        );
        assert_eq!(ports("[::]:9000"), Some(["[::]:9000", "[::]:9001", "[::]:9002"].map(String::from)));
        assert_eq!([ports("127.0.0.1:65534"), ports("127.0.0.1:0")], [None, None]);
        let client = |addr: &str| client_addr(addr.parse().unwrap()).to_string();
        assert_eq!(
            [client("0.0.0.0:1"), client("[::]:1"), client("127.0.0.2:1")],
            ["127.0.0.1:1", "[::1]:1", "127.0.0.2:1"]
        );
    }
}
