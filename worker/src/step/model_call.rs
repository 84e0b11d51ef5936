//! The step's model call: the middleware's `before_model` hooks, the
//! request from the compression cursor on, the call through the stack
//! (streamed to the run's delta stream while someone follows it), its
//! span and events, and the run's step count and usage.

use std::sync::Arc;
use std::time::Instant;

use deepfleet_model::{CallPurpose, DeltaSink, ModelRequest, ModelResponse, RateHint, Sampling};
use deepfleet_proto::AssistantMessage;
use deepfleet_store::Store;
use tracing::{Instrument, warn};

use crate::agent::Agent;
use crate::context::StepContext;
use crate::error::StepError;
use crate::events::Event;
use crate::middleware::ModelNext;
use crate::step::deltas::DeltaForwarder;
use crate::step::{call_ids, spans};

/// Calls the model for thread step `step`: the model's turn, its usage
/// recorded in it and in the run, its tool calls under ids unique in the
/// thread (whatever the provider sent).
pub async fn call_model(
    agent: &Agent,
    cx: &mut StepContext,
    store: &Arc<dyn Store>,
    step: u64,
) -> Result<AssistantMessage, StepError> {
    for layer in &agent.stack {
        layer.before_model(cx).await?;
    }
    let mut request = request(agent, cx);
    // Stable across redeliveries of this step: a slot the rate limiter
    // promised a deferred step is found again when it comes back.
    request.rate.claim = Some(format!("{}:{step}", cx.run.thread_id));
    // A followed run streams this call's tokens (and a summary's) to its
    // delta stream; all are appended before the step commits.
    let forwarder = forwarder(cx, store, step);
    cx.deltas = forwarder
        .as_ref()
        .map(|f| Arc::clone(f) as Arc<dyn DeltaSink>);
    let started = Instant::now();
    let span = spans::model_call(&agent.model_name);
    let response = ModelNext::new(&agent.stack, agent.model.as_ref())
        .run(request, cx)
        .instrument(span.clone())
        .await;
    if let Some(forwarder) = forwarder {
        forwarder.finish().await;
    }
    spans::record_model_call(&span, &response);
    report(agent, cx, &response, started);
    let response = response?;
    let cost = agent.price.map_or(0, |p| p.cost(&response.usage));
    cx.run.count_model_call(&response.usage, cost);
    cx.emit(Event::Cost {
        model: agent.model_name.clone(),
        nano_usd: cost,
    });
    let mut turn = response.message;
    turn.usage = Some(response.usage);
    let earlier = cx.history.iter().chain(cx.added.iter());
    let renamed = call_ids::make_unique(&mut turn.tool_calls, earlier, step);
    if renamed > 0 {
        warn!(
            run = %cx.run.run_id,
            step,
            renamed,
            "the model gave tool calls empty or repeated ids; renamed them"
        );
    }
    Ok(turn)
}

/// The request of the step's model call. From the compression cursor on:
/// older messages reach the model as the summary the summarization layer
/// puts first.
pub fn request(agent: &Agent, cx: &StepContext) -> ModelRequest {
    let system = agent.system_prompt(cx);
    // Each message was counted once, when it was logged, and the tools
    // when the agent was built; the system prompt (which changes with
    // memory and files, not per step) is counted once per distinct text.
    let counted: u64 = cx
        .history
        .iter()
        .skip(cx.compaction.view_start())
        .chain(cx.added.iter())
        .map(|m| u64::from(m.tokens))
        .sum();
    let estimated = counted + agent.tool_tokens + u64::from(agent.prompt_tokens(&system));
    ModelRequest {
        model: agent.model_name.clone(),
        system,
        messages: cx
            .history
            .iter()
            .skip(cx.compaction.view_start())
            .chain(cx.added.iter())
            .map(|m| m.message.clone())
            .collect(),
        tools: Arc::clone(agent.tools.specs()),
        max_output_tokens: agent.params.max_output_tokens,
        cache_key: Some(cx.run.thread_id.clone()),
        cache_breakpoints: Vec::new(),
        purpose: CallPurpose::Agent,
        sampling: Sampling {
            temperature: agent.params.temperature,
            top_p: agent.params.top_p,
            reasoning_effort: agent.params.reasoning_effort,
        },
        rate: RateHint {
            estimated_input_tokens: Some(estimated),
            claim: None,
        },
    }
}

/// A forwarder of the call's deltas when someone follows the run.
fn forwarder(cx: &StepContext, store: &Arc<dyn Store>, step: u64) -> Option<Arc<DeltaForwarder>> {
    if !cx.followed {
        return None;
    }
    let index = u64::try_from(cx.history.len() + cx.added.len()).unwrap_or(u64::MAX);
    Some(DeltaForwarder::start(
        Arc::clone(store),
        cx.run.run_id.clone(),
        step,
        index,
    ))
}

/// The call's events: a provider failure, and the call itself.
fn report(
    agent: &Agent,
    cx: &StepContext,
    response: &Result<ModelResponse, StepError>,
    started: Instant,
) {
    // A call the rate limiter deferred was never made: the step comes
    // back for it (see `throttle.rs`).
    if let Err(StepError::Model(e)) = response
        && e.kind == deepfleet_model::ErrorKind::AwaitingCapacity
    {
        return;
    }
    if let Err(StepError::Model(e)) = response {
        cx.emit(Event::ProviderError {
            model: agent.model_name.clone(),
            kind: e.kind,
        });
    }
    cx.emit(Event::ModelCall {
        model: agent.model_name.clone(),
        purpose: CallPurpose::Agent,
        usage: response.as_ref().ok().map(|r| r.usage),
        latency: started.elapsed(),
    });
}
