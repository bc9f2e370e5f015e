//! Glassbox instances (issue 32), through the real `glassbox serve`:
//! SQLite serves one instance per database file.

mod procs;

use procs::Serve;

/// A second server on the same SQLite file is refused with a message; once
/// the first is killed (SIGKILL, no clean-up), a new one starts.
#[test]
fn a_second_server_on_one_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let first = Serve::start(dir.path(), &[], &[]).expect("the first server starts");
    let refused = Serve::start(dir.path(), &[], &[])
        .err()
        .expect("the second server is refused");
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("is already served by another `glassbox serve`")
            && refused.stderr.contains("Postgres"),
        "the refusal says why and what to do: {}",
        refused.stderr
    );
    // The refused process changed nothing: the first still answers.
    assert_eq!(procs::get_status(&first.url, "/api/v1/health"), 200);
    first.kill9();
    let again = Serve::start(dir.path(), &[], &[]).expect("starts after a kill -9");
    again.kill9();
}
