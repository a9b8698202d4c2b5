// The OpenAI Agents SDK for JavaScript (@openai/agents) traced by OpenInference JS's
// OpenAI Agents instrumentation (a TracingProcessor the SDK calls, in place of its own
// exporter to the vendor: nothing leaves the machine), its model the SDK's chat-completions
// model against the scripted model. The step budget is the SDK's own maxTurns; a nested
// agent is `asTool`; a session is OpenInference's own setSession on the context.
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { context } from '@opentelemetry/api';
import * as agents from '@openai/agents';
import { OpenAIAgentsInstrumentation } from '@arizeai/openinference-instrumentation-openai-agents';
import { setSession } from '@arizeai/openinference-core';
import { z } from 'zod';

import { inMemoryTracing, serve, toolCaller, zodObject } from '../harness.mjs';

const { Agent, MaxTurnsExceededError, getGlobalTraceProvider, run, setDefaultOpenAIKey, setOpenAIAPI, tool } = agents;
const tracing = inMemoryTracing(
  { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter, JsonTraceSerializer, resourceFromAttributes },
  'openai-agents-js-openinference');
// exclusive (the default): the OpenInference processor replaces the SDK's exporter to OpenAI
new OpenAIAgentsInstrumentation({ tracerProvider: tracing.provider }).manuallyInstrument(agents);

let env;

function tools(only) {
  return env.specs.filter((t) => !only || only.includes(t.name)).map((t) => tool({
    name: t.name, description: t.description,
    parameters: zodObject(z, t.params),
    execute: async (args) => env.call(t.name, args),
  }));
}

serve({
  ...tracing,
  // the SDK ends a run's trace (the root span) after run() settles: its processors first
  async flush() {
    await getGlobalTraceProvider().forceFlush();
    await tracing.flush();
  },
  async init(msg) {
    // the SDK's OpenAI client reads its endpoint from the environment
    process.env.OPENAI_BASE_URL = msg.model_url;
    setDefaultOpenAIKey('sk-scripted-not-a-key');
    setOpenAIAPI('chat_completions');
    env = { specs: msg.tools, call: toolCaller(msg.tools_url), budget: msg.budget, model: msg.model };
  },
  async build(scenario) {
    const list = tools();
    if (scenario.needs.includes('nested')) {
      const inner = new Agent({ name: 'weather_specialist', instructions: 'Answer weather questions.',
        model: env.model, tools: tools(['get_weather']) });
      list.push(inner.asTool({ toolName: 'weather_specialist', toolDescription: 'Ask the weather specialist.' }));
    }
    const agent = new Agent({ name: 'assistant', instructions: 'Help the user; use the tools.', model: env.model,
      tools: list });
    const go = async () => {
      try {
        await run(agent, scenario.prompt, { maxTurns: env.budget });
      } catch (e) {
        if (!(e instanceof MaxTurnsExceededError)) throw e;
      }
    };
    if (!scenario.session) return go;
    return () => context.with(setSession(context.active(), { sessionId: scenario.session }), go);
  },
});
