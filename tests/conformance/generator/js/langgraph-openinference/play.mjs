// LangGraph.js (a prebuilt ReAct agent over @langchain/openai's ChatOpenAI) traced by
// OpenInference JS's LangChain instrumentation, against the scripted model. The step budget
// is LangGraph's own recursionLimit (25 super-steps: 12 model/tool rounds), as the Python
// LangGraph families set it; a nested agent is a tool that invokes an agent of its own; a
// session is OpenInference's own setSession on the context.
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { context } from '@opentelemetry/api';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import { setSession } from '@arizeai/openinference-core';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { GraphRecursionError } from '@langchain/langgraph';
import { createReactAgent, ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

import { inMemoryTracing, serve, toolCaller, zodObject } from '../harness.mjs';

const tracing = inMemoryTracing(
  { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter, JsonTraceSerializer, resourceFromAttributes },
  'langgraph-js-openinference');
new LangChainInstrumentation({ tracerProvider: tracing.provider }).manuallyInstrument(CallbackManagerModule);

let env;

function tools(only) {
  return env.specs.filter((t) => !only || only.includes(t.name)).map((t) => tool(
    async (args) => env.call(t.name, args),
    { name: t.name, description: t.description,
      schema: zodObject(z, t.params) }));
}

// handleToolErrors: a raised tool error goes back to the model as a ToolMessage with status
// "error", as a LangGraph agent in production is set up to do (the Python families' too)
function agent(name, list) {
  return createReactAgent({ llm: env.llm, tools: new ToolNode(list, { handleToolErrors: true }), name });
}

serve({
  ...tracing,
  async init(msg) {
    env = { specs: msg.tools, call: toolCaller(msg.tools_url), budget: msg.budget,
      llm: new ChatOpenAI({ model: msg.model, apiKey: 'sk-scripted-not-a-key', maxRetries: 0,
        configuration: { baseURL: msg.model_url } }) };
  },
  async build(scenario) {
    const list = tools();
    if (scenario.needs.includes('nested')) {
      const inner = agent('weather_specialist', tools(['get_weather']));
      list.push(tool(async ({ input }) => {
        const out = await inner.invoke({ messages: [{ role: 'user', content: input }] });
        return String(out.messages.at(-1).content);
      }, { name: 'weather_specialist', description: 'Ask the weather specialist agent.',
        schema: z.object({ input: z.string().describe('the question') }) }));
    }
    const graph = agent('assistant', list);
    const run = async () => {
      try {
        await graph.invoke({ messages: [{ role: 'user', content: scenario.prompt }] },
          { recursionLimit: 2 * env.budget + 1 });
      } catch (e) {
        if (!(e instanceof GraphRecursionError)) throw e;
      }
    };
    if (!scenario.session) return run;
    return () => context.with(setSession(context.active(), { sessionId: scenario.session }), run);
  },
});
