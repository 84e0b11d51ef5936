//! What the fuzz targets share: the round-trip check every decoder must
//! pass, and a runtime for the async code under test.
//!
//! A target panics to report a failure, so every check here asserts.

pub mod json;
pub mod runtime;
