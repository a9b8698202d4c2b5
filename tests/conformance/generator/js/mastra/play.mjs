// Mastra (@mastra/core's Agent over @ai-sdk/openai's chat-completions model) traced by
// Mastra's own observability through its OpenTelemetry bridge (@mastra/otel-bridge: native
// OTel spans on the global tracer provider), against the scripted model. The step budget is
// the agent's own maxSteps; a nested agent is a tool that asks an agent of its own. Mastra
// 1.x needs Node 22.13: this folder's `node` package pins it (node.py runs that binary).
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelBridge } from '@mastra/otel-bridge';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

import { inMemoryTracing, serve, toolCaller, zodObject } from '../harness.mjs';

const tracing = inMemoryTracing(
  { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter, JsonTraceSerializer, resourceFromAttributes },
  'mastra-otel-bridge');
const observability = new Observability({ configs: { default: { serviceName: 'mastra-otel-bridge',
  bridge: new OtelBridge() } } });

let env;

function tools(only) {
  const out = {};
  for (const t of env.specs) {
    if (only && !only.includes(t.name)) continue;
    out[t.name] = createTool({
      id: t.name, description: t.description,
      inputSchema: zodObject(z, t.params),
      execute: async (input) => env.call(t.name, input),
    });
  }
  return out;
}

serve({
  ...tracing,
  // Mastra hands its spans to the bridge from its own event bus: drained first
  async flush() {
    await observability.flush();
    await tracing.flush();
  },
  async init(msg) {
    const openai = createOpenAI({ baseURL: msg.model_url, apiKey: 'sk-scripted-not-a-key' });
    env = { model: openai.chat(msg.model), budget: msg.budget, specs: msg.tools, call: toolCaller(msg.tools_url) };
  },
  async build(scenario) {
    const all = tools();
    const agents = {};
    if (scenario.needs.includes('nested')) {
      agents.weather_specialist = new Agent({ id: 'weather_specialist', name: 'weather_specialist',
        instructions: 'Answer weather questions.', model: env.model, tools: tools(['get_weather']) });
      all.weather_specialist = createTool({
        id: 'weather_specialist', description: 'Ask the weather specialist agent.',
        inputSchema: z.object({ input: z.string().describe('the question') }),
        execute: async ({ input }) => (await mastra.getAgent('weather_specialist').generate(input,
          { maxSteps: env.budget })).text,
      });
    }
    agents.assistant = new Agent({ id: 'assistant', name: 'assistant', instructions: 'Help the user; use the tools.',
      model: env.model, tools: all });
    const mastra = new Mastra({ agents, observability, logger: false });
    const agent = mastra.getAgent('assistant');
    return async () => { await agent.generate(scenario.prompt, { maxSteps: env.budget }); };
  },
});
