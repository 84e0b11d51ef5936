//! Path validation: the rules live in the wire contract
//! ([`deepfleet_proto::path`]) so the scheduler checks seed files exactly as
//! the tools check the model's paths.

pub use deepfleet_proto::path::validate;
