// The Vercel AI SDK (`ai`) with its own OpenTelemetry telemetry (`experimental_telemetry`),
// against the scripted model through @ai-sdk/openai's chat-completions model. The agent is
// one generateText (or, `--mode stream`, one streamText) call with the scenario's tools,
// its step budget `stopWhen: stepCountIs(budget)`; a nested agent is a tool whose execute
// runs a generateText of its own.
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

import { inMemoryTracing, serve, toolCaller, zodObject } from '../harness.mjs';

const mode = process.argv.includes('--mode') ? process.argv[process.argv.indexOf('--mode') + 1] : 'generate';
const tracing = inMemoryTracing(
  { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter, JsonTraceSerializer, resourceFromAttributes },
  `vercel-ai-${mode}`);

let env;

function tools(specs, only) {
  const out = {};
  for (const t of specs) {
    if (only && !only.includes(t.name)) continue;
    out[t.name] = tool({ description: t.description, inputSchema: zodObject(z, t.params),
      execute: async (args) => env.call(t.name, args) });
  }
  return out;
}

function telemetry(functionId) {
  return { isEnabled: true, functionId };
}

serve({
  ...tracing,
  async init(msg) {
    const openai = createOpenAI({ baseURL: msg.model_url, apiKey: 'sk-scripted-not-a-key' });
    env = { model: openai.chat(msg.model), budget: msg.budget, specs: msg.tools, call: toolCaller(msg.tools_url) };
  },
  async build(scenario) {
    const all = tools(env.specs);
    if (scenario.needs.includes('nested')) {
      all.weather_specialist = tool({
        description: 'Ask the weather specialist agent.',
        inputSchema: z.object({ input: z.string().describe('the question') }),
        execute: async ({ input }) => (await generateText({
          model: env.model, system: 'Answer weather questions.', prompt: input,
          tools: tools(env.specs, ['get_weather']), stopWhen: stepCountIs(env.budget),
          experimental_telemetry: telemetry('weather_specialist'),
        })).text,
      });
    }
    const call = { model: env.model, system: 'Help the user; use the tools.', prompt: scenario.prompt, tools: all,
      stopWhen: stepCountIs(env.budget), experimental_telemetry: telemetry('assistant') };
    if (mode === 'stream') {
      return async () => {
        const result = streamText({ ...call, onError: () => {} });
        await result.consumeStream();
        await result.text;
      };
    }
    return async () => { await generateText(call); };
  },
});
