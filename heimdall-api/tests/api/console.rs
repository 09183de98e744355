//! The web Console (`heimdall-api/src/console.rs`): its three embedded
//! files are served under `/console` with their content types and the
//! security headers, and name nothing outside `/console/` (no CDN, no
//! external font: nothing is fetched from elsewhere).

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn assert_secure(response: &reqwest::Response, what: &str) {
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("content-security-policy").as_deref(), Some(CSP), "{what}");
    assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"), "{what}");
    assert_eq!(header("referrer-policy").as_deref(), Some("no-referrer"), "{what}");
    assert_eq!(header("cache-control").as_deref(), Some("no-cache"), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_served_embedded_with_its_headers_and_names_no_other_origin() {
    let api = heimdall_api::testing::TestApi::sqlite().await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    let redirect = http.get(format!("{}/console", api.url)).send().await.unwrap();
    assert_eq!(redirect.status(), 308);
    assert_eq!(redirect.headers()["location"], "/console/");
    assert_secure(&redirect, "/console");
    // The server's root is the way in for a person with a browser.
    let root = http.get(format!("{}/", api.url)).send().await.unwrap();
    assert_eq!(root.status(), 308);
    assert_eq!(root.headers()["location"], "/console/");
    assert_secure(&root, "/");

    let mut bodies = Vec::new();
    for (path, content_type) in [
        ("/console/", "text/html; charset=utf-8"),
        ("/console/index.html", "text/html; charset=utf-8"),
        ("/console/console.js", "text/javascript; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
    ] {
        let response = http.get(format!("{}{path}", api.url)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], content_type, "{path}");
        assert_secure(&response, path);
        let body = response.text().await.unwrap();
        assert!(!body.is_empty(), "{path}");
        for scheme in ["http://", "https://"] {
            assert!(
                !body.contains(scheme),
                "{path} names another origin ({scheme}): no CDN, no external font"
            );
        }
        bodies.push((path, body));
    }

    // index.html loads its script and style from /console/ only, and
    // nothing inline (the CSP allows 'self' alone).
    let index = &bodies[0].1;
    assert!(index.contains(r#"src="/console/console.js""#), "{index}");
    assert!(index.contains(r#"href="/console/console.css""#), "{index}");
    for attribute in ["src=\"", "href=\""] {
        for (n, _) in index.match_indices(attribute) {
            let target = &index[n + attribute.len()..];
            assert!(
                target.starts_with("/console/") || target.starts_with("data:"),
                "index.html names {}",
                &target[..target.find('"').unwrap_or(target.len())]
            );
        }
    }
    assert!(!index.contains("<script>") && !index.contains("<style"), "no inline script or style: {index}");

    // The Console's script asks the API only, never for a value.
    let script = &bodies[2].1;
    assert!(script.contains("/v1/"), "the script calls the API");
    assert!(!script.contains("/versions"), "the Console never asks for secret versions (a value route)");
    assert!(
        !script.contains("localStorage") && !script.contains("document.cookie"),
        "the token stays in sessionStorage"
    );

    // Anything else under /console is the API's ordinary 404.
    let missing = http.get(format!("{}/console/missing.js", api.url)).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}
