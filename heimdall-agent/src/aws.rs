//! How the Agent reaches AWS (DynamoDB for the value store, KMS for the
//! master key): the SDK's usual credential chain (environment, profile,
//! web identity, container and instance roles), HTTPS with rustls on ring
//! (no OpenSSL, no aws-lc), and two optional overrides from `[values]` in
//! agent.toml: `aws_region` and `aws_endpoint_url` (a VPC endpoint, or moto
//! in tests).

use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig};
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};

/// Region and endpoint overrides; `None` leaves the SDK's default
/// (`AWS_REGION`, the profile, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AwsSettings {
    pub region: Option<String>,
    pub endpoint_url: Option<String>,
}

/// The SDK's configuration loader with this crate's HTTPS client and the
/// overrides applied; credentials come from the default chain unless the
/// caller sets a provider.
pub fn loader(settings: &AwsSettings) -> ConfigLoader {
    let http =
        aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https();
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
    if let Some(region) = &settings.region {
        loader = loader.region(Region::new(region.clone()));
    }
    if let Some(url) = &settings.endpoint_url {
        loader = loader.endpoint_url(url);
    }
    loader
}

/// No region in the settings nor in the environment.
#[derive(Debug, thiserror::Error)]
#[error("no AWS region: set aws_region in [values] or AWS_REGION in the environment")]
pub struct NoRegion;

/// Loads the configuration (see [`loader`]); refuses one without a region,
/// which every call would otherwise fail on later with a vaguer message.
pub async fn sdk_config(settings: &AwsSettings) -> Result<SdkConfig, NoRegion> {
    let config = loader(settings).load().await;
    require_region(&config)?;
    Ok(config)
}

/// An error unless `config` names a region.
pub fn require_region(config: &SdkConfig) -> Result<(), NoRegion> {
    if config.region().is_none() {
        return Err(NoRegion);
    }
    Ok(())
}

/// An SDK error as text: the service's error code and message when there is
/// one (never the request or response body), otherwise the error chain.
/// (`SdkError`, `ProvideErrorMetadata` and `DisplayErrorContext` are the
/// smithy types every SDK crate re-exports.)
pub(crate) fn describe<E, R>(err: &SdkError<E, R>) -> String
where
    E: std::error::Error + ProvideErrorMetadata + 'static,
    R: std::fmt::Debug,
{
    match err {
        SdkError::ServiceError(service) => {
            let e = service.err();
            match (e.code(), e.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_owned(),
                _ => DisplayErrorContext(e).to_string(),
            }
        }
        other => DisplayErrorContext(other).to_string(),
    }
}
