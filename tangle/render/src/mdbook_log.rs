//! mdBook reports what it cannot do while building (an `{{#include}}` of a missing file, a
//! renderer's failure) through `tracing` and carries on. [`Errors`] watches a build: what mdBook
//! logs still reaches stderr as before, and every error is counted, so that the build can fail.

use std::sync::{Arc, Mutex};

use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The errors mdBook logged while a [`Errors::watch`] scope was open.
#[derive(Clone, Default)]
pub struct Errors(Arc<Mutex<Vec<String>>>);

impl Errors {
    /// Counts the errors this thread logs until the guard drops, printing what it logs at
    /// warning level and above (all levels that `RUST_LOG` asks for) to stderr.
    pub fn watch(&self) -> tracing::subscriber::DefaultGuard {
        let level = match std::env::var("RUST_LOG").ok().as_deref() {
            Some("trace") => tracing::level_filters::LevelFilter::TRACE,
            Some("debug") => tracing::level_filters::LevelFilter::DEBUG,
            Some("info") => tracing::level_filters::LevelFilter::INFO,
            _ => tracing::level_filters::LevelFilter::WARN,
        };
        let print = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .with_filter(level);
        tracing_subscriber::registry().with(print).with(Counter(self.clone())).set_default()
    }

    pub fn count(&self) -> usize {
        self.0.lock().expect("not poisoned").len()
    }

    /// The first error logged, if any.
    pub fn first(&self) -> Option<String> {
        self.0.lock().expect("not poisoned").first().cloned()
    }
}

struct Counter(Errors);

impl<S: tracing::Subscriber> Layer<S> for Counter {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::ERROR {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        (self.0).0.lock().expect("not poisoned").push(message.0);
    }
}

/// The `message` field of an event.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_logged_in_the_scope_are_counted_and_others_are_not() {
        let errors = Errors::default();
        tracing::error!("before the scope");
        {
            let _scope = errors.watch();
            tracing::warn!("a warning");
            tracing::error!("Error updating \"{}\", {}", "{{#include missing.rs}}", "not found");
        }
        tracing::error!("after the scope");
        assert_eq!(errors.count(), 1);
        assert_eq!(errors.first().unwrap(), "Error updating \"{{#include missing.rs}}\", not found");
    }
}
