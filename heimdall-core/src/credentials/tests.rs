use super::*;

fn text(file: &SecretBytes) -> String {
    String::from_utf8(file.expose().to_vec()).unwrap()
}

#[test]
fn aws_keys_become_a_profile_in_a_credentials_file() {
    let value = br#"{"access_key_id":"AKIAEXAMPLE","secret_access_key":"s3cr3t","session_token":"tok"}"#;
    let creds = for_provider(Provider::Aws, "aws-prod", value).unwrap();
    let (path, file) = &creds.files[0];
    assert_eq!(*path, ".heimdall-credentials/aws-credentials");
    assert_eq!(
        text(file),
        "[heimdall]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = s3cr3t\naws_session_token = tok\n"
    );
    assert!(creds.env.contains(&("AWS_PROFILE", EnvValue::Text("heimdall".into()))));
    assert!(creds.env.contains(&("AWS_SHARED_CREDENTIALS_FILE", EnvValue::File(path))));
    // The Agent's own keys would win over the file: they go.
    assert!(creds.unset.contains(&"AWS_ACCESS_KEY_ID") && creds.unset.contains(&"AWS_SESSION_TOKEN"));
    // Nothing secret in the environment, nor in Debug.
    let env = format!("{:?}", creds.env);
    let debug = format!("{creds:?}");
    for secret in ["s3cr3t", "tok"] {
        assert!(!env.contains(secret) && !debug.contains(secret), "{debug}");
    }
}

#[test]
fn each_provider_reads_its_own_shape() {
    let gcp = br#"{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nx\n"}"#;
    let creds = for_provider(Provider::Gcp, "gcp", gcp).unwrap();
    assert_eq!(creds.files[0].1.expose().as_slice(), gcp.as_slice());
    assert_eq!(
        creds.env,
        [("GOOGLE_APPLICATION_CREDENTIALS", EnvValue::File(".heimdall-credentials/gcp-credentials.json"))]
    );

    let azure = br#"{"client_id":"c","client_secret":"pw","tenant_id":"t","subscription_id":"s"}"#;
    let creds = for_provider(Provider::Azure, "azure", azure).unwrap();
    assert_eq!(text(&creds.files[0].1), "pw");
    assert!(creds.env.contains(&("ARM_CLIENT_ID", EnvValue::Text("c".into()))));
    assert!(creds.env.contains(&(
        "ARM_CLIENT_SECRET_FILE_PATH",
        EnvValue::File(".heimdall-credentials/azure-client-secret")
    )));
    assert!(!format!("{:?}", creds.env).contains("pw"));

    for provider in [Provider::Kubernetes, Provider::Helm] {
        let creds = for_provider(provider, "kube", b"apiVersion: v1\nkind: Config\n").unwrap();
        assert_eq!(creds.env, [("KUBE_CONFIG_PATH", EnvValue::File(".heimdall-credentials/kubeconfig"))]);
    }

    let creds = for_provider(Provider::Cloudflare, "cf", br#"{"api_token":"cf-token"}"#).unwrap();
    assert_eq!(creds.files[0].0, "heimdall-credentials.auto.tfvars.json");
    assert_eq!(text(&creds.files[0].1), r#"{"heimdall_cloudflare_api_token":"cf-token"}"#);
    assert!(creds.root_config.unwrap().contains("api_token = var.heimdall_cloudflare_api_token"));
    assert!(creds.env.is_empty());
}

#[test]
fn a_value_of_the_wrong_shape_is_refused_without_quoting_it() {
    for (provider, value) in [
        (Provider::Aws, &br#"{"access_key_id":"AKIA"}"#[..]),
        (Provider::Aws, br#"{"access_key_id":"AKIA","secret_access_key":"a\nb"}"#),
        (Provider::Aws, b"hunter2"),
        (Provider::Gcp, br#"{"private_key":"hunter2"}"#),
        (Provider::Azure, br#"{"client_secret":"hunter2"}"#),
        (Provider::Kubernetes, b""),
        (Provider::Cloudflare, br#"{"token":"hunter2"}"#),
    ] {
        let err = for_provider(provider, "cred", value).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput, "{provider:?}");
        assert!(err.message.contains("secret cred") && !err.message.contains("hunter2"), "{}", err.message);
    }
}

fn identity_token() -> crate::credentials::JobCredentials {
    crate::credentials::JobCredentials::IdentityToken {
        token: Redacted::new("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln".into()),
        expires_at: time::OffsetDateTime::UNIX_EPOCH,
    }
}

const PLACE: JobPlace<'static> = JobPlace { dir: "/work/job-1", gcp_token_url: GCP_TOKEN_URL };

fn oidc(target: crate::infra::OidcTarget) -> AccountAuth {
    AccountAuth::Oidc(target)
}

#[test]
fn a_gcp_token_becomes_an_external_account_reading_it_from_a_file() {
    let pool = "projects/1/locations/global/workloadIdentityPools/p/providers/h";
    let target = crate::infra::OidcTarget {
        workload_identity_provider: Some(pool.into()),
        service_account: Some("tf@acme.iam.gserviceaccount.com".into()),
        ..Default::default()
    };
    let creds = federated(&identity_token(), Provider::Gcp, &oidc(target), PLACE).unwrap();
    let file = |name: &str| creds.files.iter().find(|(p, _)| *p == name).map(|(_, f)| text(f)).unwrap();
    assert_eq!(file(".heimdall-credentials/oidc-token"), "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln");
    let account: serde_json::Value =
        serde_json::from_str(&file(".heimdall-credentials/gcp-external-account.json")).unwrap();
    assert_eq!(account["type"], "external_account");
    assert_eq!(account["audience"], format!("//iam.googleapis.com/{pool}"));
    assert_eq!(account["token_url"], GCP_TOKEN_URL);
    assert_eq!(account["credential_source"]["file"], "/work/job-1/.heimdall-credentials/oidc-token");
    assert_eq!(
        account["service_account_impersonation_url"],
        "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/tf@acme.iam.gserviceaccount.com:generateAccessToken"
    );
    assert_eq!(
        creds.env,
        [(
            "GOOGLE_APPLICATION_CREDENTIALS",
            EnvValue::File(".heimdall-credentials/gcp-external-account.json")
        )]
    );
}

#[test]
fn an_azure_token_is_a_file_the_provider_reads_never_the_environment() {
    let target = crate::infra::OidcTarget {
        client_id: Some("app-id".into()),
        tenant_id: Some("tenant".into()),
        subscription_id: Some("sub".into()),
        ..Default::default()
    };
    let creds = federated(&identity_token(), Provider::Azure, &oidc(target), PLACE).unwrap();
    assert!(creds.env.contains(&("ARM_USE_OIDC", EnvValue::Text("true".into()))));
    assert!(creds
        .env
        .contains(&("ARM_OIDC_TOKEN_FILE_PATH", EnvValue::File(".heimdall-credentials/oidc-token"))));
    assert!(creds.env.contains(&("ARM_CLIENT_ID", EnvValue::Text("app-id".into()))));
    assert!(!format!("{:?}", creds.env).contains("eyJ"), "the token is in the environment");
    assert!(creds.unset.contains(&"ARM_OIDC_TOKEN") && creds.unset.contains(&"ARM_CLIENT_SECRET"));
}

#[test]
fn a_kubernetes_token_is_the_bearer_token_of_a_generated_kubeconfig() {
    let target = crate::infra::OidcTarget {
        cluster_url: Some("https://k8s.acme.internal:6443".into()),
        cluster_ca: Some("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into()),
        ..Default::default()
    };
    for provider in [Provider::Kubernetes, Provider::Helm] {
        let creds = federated(&identity_token(), provider, &oidc(target.clone()), PLACE).unwrap();
        let (path, file) = &creds.files[0];
        let config: serde_json::Value = serde_json::from_str(&text(file)).unwrap();
        assert_eq!(config["current-context"], "heimdall");
        assert_eq!(config["clusters"][0]["cluster"]["server"], "https://k8s.acme.internal:6443");
        use base64::Engine as _;
        let ca = base64::engine::general_purpose::STANDARD
            .decode(config["clusters"][0]["cluster"]["certificate-authority-data"].as_str().unwrap())
            .unwrap();
        assert!(String::from_utf8(ca).unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
        assert_eq!(config["users"][0]["user"]["token"], "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln");
        assert_eq!(creds.env, [("KUBE_CONFIG_PATH", EnvValue::File(path))]);
    }
}

#[test]
fn a_federated_credential_that_does_not_fit_is_refused() {
    let gcp = oidc(crate::infra::OidcTarget {
        workload_identity_provider: Some(
            "projects/1/locations/global/workloadIdentityPools/p/providers/h".into(),
        ),
        ..Default::default()
    });
    let not_jwt = crate::credentials::JobCredentials::IdentityToken {
        token: Redacted::new("a\"b".into()),
        expires_at: time::OffsetDateTime::UNIX_EPOCH,
    };
    let aws_keys = crate::credentials::JobCredentials::Aws {
        access_key_id: "AKIA".into(),
        secret_access_key: Redacted::new("s".into()),
        session_token: Redacted::new("t".into()),
        expires_at: time::OffsetDateTime::UNIX_EPOCH,
    };
    for (creds, provider, auth) in [
        (&not_jwt, Provider::Gcp, &gcp),
        (&aws_keys, Provider::Gcp, &gcp),
        (&identity_token(), Provider::Aws, &gcp),
        (&identity_token(), Provider::Azure, &gcp), // no client, tenant, subscription
        (&identity_token(), Provider::Gcp, &AccountAuth::Static { secret: "x".into() }),
    ] {
        let err = federated(creds, provider, auth, PLACE).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput, "{provider}");
    }
}

#[test]
fn an_azure_storage_key_goes_to_the_backend_by_file() {
    let value = br#"{"client_id":"c","client_secret":"cs","tenant_id":"t","subscription_id":"s","storage_access_key":"a2V5Kw=="}"#;
    let creds = for_provider(Provider::Azure, "azure-sp", value).unwrap();
    let path = creds.backend_config.unwrap();
    let file = creds.files.iter().find(|(p, _)| *p == path).map(|(_, f)| text(f)).unwrap();
    assert_eq!(file, "access_key = \"a2V5Kw==\"\n");
    assert!(!format!("{:?} {creds:?}", creds.env).contains("a2V5Kw"));
    // Without it the backend signs in with the identity; with a key that is not base64, refused.
    let plain = for_provider(
        Provider::Azure,
        "azure-sp",
        br#"{"client_id":"c","client_secret":"cs","tenant_id":"t","subscription_id":"s"}"#,
    );
    assert!(plain.unwrap().backend_config.is_none());
    let bad = br#"{"client_id":"c","client_secret":"cs","tenant_id":"t","subscription_id":"s","storage_access_key":"x\"\n}"}"#;
    let err = for_provider(Provider::Azure, "azure-sp", bad).unwrap_err();
    assert!(!err.message.contains("x\""), "{}", err.message);
}
