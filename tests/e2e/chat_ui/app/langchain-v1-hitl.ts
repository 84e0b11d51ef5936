// LangChain v1's human in the loop (HumanInTheLoopMiddleware, deepagents,
// deepfleet) for this version of the Agent Chat UI, which knows only
// LangGraph's prebuilt `HumanInterrupt`: the interrupt's
// `{action_requests, review_configs}` is shown as the `HumanInterrupt`s
// the agent inbox renders, and the inbox's answer goes back as v1's
// `{decisions: [...]}`, one decision per action request.
import type {
  HumanInterrupt,
  HumanResponse,
} from "@langchain/langgraph/prebuilt";

type Decision = "approve" | "edit" | "reject" | "respond";

interface HitlRequest {
  action_requests: { name: string; args: Record<string, unknown>; description?: string }[];
  review_configs: { action_name: string; allowed_decisions: Decision[] }[];
}

function isHitlRequest(value: unknown): value is HitlRequest {
  return (
    !!value &&
    typeof value === "object" &&
    Array.isArray((value as HitlRequest).action_requests) &&
    Array.isArray((value as HitlRequest).review_configs)
  );
}

function asHumanInterrupts(request: HitlRequest): HumanInterrupt[] {
  return request.action_requests.map((action, i) => {
    const allowed = request.review_configs[i]?.allowed_decisions ?? [];
    return {
      action_request: { action: action.name, args: action.args },
      config: {
        allow_accept: allowed.includes("approve"),
        allow_edit: allowed.includes("edit"),
        allow_respond: allowed.includes("respond"),
        allow_ignore: allowed.includes("reject"),
      },
      description: action.description,
    };
  });
}

function asDecision(response: HumanResponse) {
  switch (response.type) {
    case "accept":
      return { type: "approve" };
    case "edit": {
      const edited = response.args as { action: string; args: unknown };
      return { type: "edit", edited_action: { name: edited.action, args: edited.args } };
    }
    case "response":
      return { type: "respond", message: response.args };
    case "ignore":
      return { type: "reject" };
  }
}


type Stream = {
  interrupt?: { value?: unknown } | undefined;
  submit: (values: any, options?: any) => unknown;
};

export function withLangChainV1Hitl<S extends Stream>(stream: S): S {
  const interrupt = stream.interrupt;
  const request = interrupt?.value;
  if (!isHitlRequest(request)) return stream;
  return {
    ...stream,
    interrupt: { ...interrupt, value: asHumanInterrupts(request) },
    submit: (values: any, options?: any) => {
      const resume = options?.command?.resume;
      if (!Array.isArray(resume)) return stream.submit(values, options);
      return stream.submit(values, {
        ...options,
        // One decision per answer: the inbox shows and answers the first
        // action request only, so a turn with several gated calls is
        // refused by the server (a decision each) rather than approved
        // unseen.
        command: { ...options.command, resume: { decisions: resume.map(asDecision) } },
      });
    },
  };
}
