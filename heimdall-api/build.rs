// `sqlx::migrate!` embeds the migration files at compile time; rebuild
// when one is added or changed, not only when Rust code changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
