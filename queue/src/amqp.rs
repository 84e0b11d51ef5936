//! The RabbitMQ implementation of [`crate::Queue`].

/// A queue on RabbitMQ.
pub struct AmqpQueue;
