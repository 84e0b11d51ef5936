//! The headers that point at a run: `Content-Location`, and `Location`
//! where a response is one of its sub-resources.

use axum::http::{HeaderMap, HeaderValue, header};

use deepfleet_scheduler::repo::runs::RunMeta;

/// `Content-Location` (and `Location`, when given) of a run response.
pub fn run_headers(meta: &RunMeta, location_suffix: Option<&str>) -> HeaderMap {
    let base = format!("/threads/{}/runs/{}", meta.thread_id, meta.run_id);
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&base) {
        headers.insert(header::CONTENT_LOCATION, v);
    }
    if let Some(suffix) = location_suffix
        && let Ok(v) = HeaderValue::from_str(&format!("{base}{suffix}"))
    {
        headers.insert(header::LOCATION, v);
    }
    headers
}
