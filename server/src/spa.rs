//! Serves the built browser app (`dist/`, as `cargo xtask run` or Trunk builds it) with a fallback to
//! `index.html` for client-side routes (paths whose last segment has no
//! extension; a missing file is a 404). Every file is revalidated on use
//! (`Cache-Control: no-cache`).
//!
//! When the app has not been built, every non-API path answers with a short
//! page that says how to build it; the API keeps working either way.

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

/// The page served at `/` when `dist/index.html` does not exist.
pub const NOT_BUILT_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Glassbox: app not built</title></head>
<body style="font-family: sans-serif; max-width: 40rem; margin: 3rem auto">
<h1>Glassbox is running, but the app has not been built</h1>
<p>The JSON API is available under <a href="/api/v1/health"><code>/api/v1</code></a>.</p>
<p>To build the browser app, run <code>cargo xtask run</code> from the repository root
(it installs the tools the build needs, builds the app into <code>dist/</code> and starts
the server with it), or restart this server with <code>--static-dir</code> naming a built
<code>dist/</code>.</p>
</body></html>
"#;

/// A service for every path the API does not own.
pub fn service(
    static_dir: Option<&Path>,
) -> impl tower::Service<Request, Response = Response, Error = Infallible, Future = impl Send>
       + Clone
       + Send {
    let dir: Option<PathBuf> = static_dir.map(Path::to_path_buf);
    tower::service_fn(move |req: Request| {
        let dir = dir.clone();
        async move {
            let Some(dir) = dir else {
                return Ok(not_built());
            };
            let index = dir.join("index.html");
            if !index.is_file() {
                return Ok(not_built());
            }
            // A missing file (a name with an extension: a route module,
            // a stale hashed asset) is a 404, so its loader fails plainly
            // instead of receiving index.html; any other path is a client
            // route.
            let file_name = req.uri().path().rsplit('/').next().unwrap_or_default();
            // The build's gzipped copies (`<file>.gz`) go to browsers
            // that accept gzip.
            let res = if file_name.contains('.') {
                ServeDir::new(&dir).precompressed_gzip().oneshot(req).await
            } else {
                ServeDir::new(&dir)
                    .precompressed_gzip()
                    .fallback(ServeFile::new(index))
                    .oneshot(req)
                    .await
            };
            let mut res = match res {
                Ok(res) => res.map(Body::new),
                Err(err) => match err {},
            };
            // Revalidated on every use (a 304 when unchanged): the loader and
            // the route modules keep their names across builds, and a stale
            // one beside a new main module would break the app.
            res.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static("no-cache"),
            );
            Ok(res)
        }
    })
}

fn not_built() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        NOT_BUILT_PAGE,
    )
        .into_response()
}
