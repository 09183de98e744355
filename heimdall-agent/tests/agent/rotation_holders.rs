//! A database service user rotated through whichever Agent holds its
//! environment. Two Agents on separate stores hold `dev`; each rotation is
//! made to run on the other one (the first is down), so one rotates a
//! user it did not create and the other later rotates from a credential
//! it fetched, not from its own older record. Every login either Agent
//! serves works on MariaDB, the previous one until its grace ends; the
//! admin login has exactly the grants the documentation lists.

use serde_json::{json, Value};
use sqlx::Connection;

use crate::databases::{app_database, credential, log_in, mariadb_root, rotating_agent, until_version, user};
use crate::support::{agent_client, World};
use crate::values::{eventually, holders_reachable, identity, set};

/// An admin login made with the grants `docs/secrets.md` lists for
/// MariaDB, for `database`: its credentials as the admin secret holds them.
async fn documented_admin(database: &str) -> Value {
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..10];
    let (login, password) = (format!("hadmin_{suffix}"), format!("Pw{suffix}x9"));
    let mut root = sqlx::MySqlConnection::connect_with(&mariadb_root()).await.unwrap();
    for sql in [
        format!("CREATE USER `{login}`@'%' IDENTIFIED BY '{password}'"),
        format!("GRANT CREATE USER ON *.* TO `{login}`@'%'"),
        format!("GRANT SELECT, INSERT ON `{database}`.* TO `{login}`@'%' WITH GRANT OPTION"),
        format!("GRANT UPDATE ON mysql.* TO `{login}`@'%'"),
    ] {
        sqlx::Executor::execute(&mut root, sql.as_str()).await.unwrap();
    }
    json!({ "username": login, "password": password })
}

async fn stop(agent: &mut tokio::process::Child) {
    agent.start_kill().unwrap();
    let _ = agent.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_holder_rotates_a_mariadb_user_and_every_login_it_serves_works() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    let (one, local_one) = rotating_agent(&w, "edge-1").await;
    let (two, local_two) = rotating_agent(&w, "edge-2").await;
    let (mut edge_1, mut edge_2) = (w.run_agent(&one), w.run_agent(&two));
    let me = identity(&w, &owner).await;
    let (via_one, via_two) = (agent_client(&one, &local_one, &me), agent_client(&two, &local_two, &me));
    let name = app_database("mariadb").await;
    // Roles are global to the server: a name no earlier run made, so the
    // documented admin login is the one that creates (and administers) it.
    let app = format!("app{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let secret = format!("db-orders-{app}");
    let users = format!("/v1/databases/orders/users/{app}");
    let rotate = format!("{users}/rotate");
    w.post(&owner, "/v1/secrets", json!({ "name": "orders-admin" })).await;
    holders_reachable(&w, &one, "orders-admin", 2).await;
    let admin = documented_admin(&name).await;
    set(&w, &owner, &me, "orders-admin", "dev", &admin.to_string()).await;

    // edge-1 alone creates the user: its store records the phases.
    stop(&mut edge_2).await;
    let database = json!({ "name": "orders", "engine": "mariadb", "host": "127.0.0.1", "port": 3306,
        "database": name, "environment": "dev", "admin_secret": "orders-admin" });
    w.post(&owner, "/v1/databases", database).await;
    let grants = format!("SELECT ON {name}.*");
    let user_body = json!({ "name": app, "rotate_every": "1d", "grace": "8s", "grants": grants });
    w.post(&owner, "/v1/databases/orders/users", user_body).await;
    until_version(&w, &one, "orders", &app, 1).await;
    let (_, first) = credential(&via_one, &secret, None).await.unwrap();
    assert_eq!(log_in(&first).await.unwrap(), format!("{app}_a"));

    // edge-2 fetches version 1; with edge-1 down, it rotates a user whose
    // phases it never recorded, from the credential it holds.
    edge_2 = w.run_agent(&two);
    eventually(&two, "edge-2 serving version 1", || async {
        credential(&via_two, &secret, None).await.is_ok_and(|(v, _)| v == 1)
    })
    .await;
    stop(&mut edge_1).await;
    w.post(&owner, &rotate, json!({})).await;
    until_version(&w, &two, "orders", &app, 2).await;
    let (v2, second) = credential(&via_two, &secret, None).await.unwrap();
    assert_eq!((v2, second.username.clone()), (2, format!("{app}_b")));
    assert_eq!(log_in(&second).await.unwrap(), second.username);
    eventually(&two, "version 1's login retired", || async {
        user(&w, "orders", &app).await.get("grace_until").is_none()
    })
    .await;
    assert!(log_in(&first).await.is_err(), "version 1's login is locked after its grace");

    // edge-1 comes back recording version 1 as current, fetches version 2,
    // and rotates from it: onto login a, never onto the b in use.
    edge_1 = w.run_agent(&one);
    eventually(&one, "edge-1 serving version 2", || async {
        credential(&via_one, &secret, None).await.is_ok_and(|(v, _)| v == 2)
    })
    .await;
    stop(&mut edge_2).await;
    w.post(&owner, &rotate, json!({})).await;
    until_version(&w, &one, "orders", &app, 3).await;
    let (_, third) = credential(&via_one, &secret, None).await.unwrap();
    assert_eq!(log_in(&third).await.unwrap(), format!("{app}_a"));
    assert_eq!(log_in(&second).await.unwrap(), second.username, "version 2's login works during its grace");

    // edge-2, back, serves version 3 too; no task ever failed.
    edge_2 = w.run_agent(&two);
    eventually(&two, "edge-2 serving version 3", || async {
        credential(&via_two, &secret, None).await.is_ok_and(|(v, _)| v == 3)
    })
    .await;
    let (_, served) = credential(&via_two, &secret, None).await.unwrap();
    assert_eq!(log_in(&served).await.unwrap(), format!("{app}_a"));
    assert!(user(&w, "orders", &app).await.get("last_error").is_none());
    stop(&mut edge_1).await;
    stop(&mut edge_2).await;
    let mut root = sqlx::MySqlConnection::connect_with(&mariadb_root()).await.unwrap();
    let admin = admin["username"].as_str().unwrap();
    for sql in
        [format!("DROP USER `{app}_a`@'%', `{app}_b`@'%', `{admin}`@'%'"), format!("DROP ROLE `{app}`")]
    {
        sqlx::Executor::execute(&mut root, sql.as_str()).await.unwrap();
    }
}
