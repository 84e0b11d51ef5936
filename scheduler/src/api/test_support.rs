//! Router test helpers.
