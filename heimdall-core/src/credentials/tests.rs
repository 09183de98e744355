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
