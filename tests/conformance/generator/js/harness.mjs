// The Node half of a JavaScript family: generator/node.py starts `node play.mjs` in the
// family's folder and drives it over stdin/stdout, one JSON message a line. A family's
// play.mjs instruments its framework with the OTel JS SDK and hands `serve` what it does:
//
//   init(msg)          msg.tools (name, description, params: name -> "string" | "number"),
//                      msg.model_url (the scripted model), msg.model, msg.budget (step limit)
//   build(scenario)    builds the agent for a scenario ({name, prompt, needs, session})
//                      and returns the call that runs it (building may be traced too)
//   traceIds()         the trace ids of every span finished so far
//   flush()            every span ended and exported to the family's in-memory exporter
//   serialize()        every span as one OTLP/JSON export request (the SDK's own encoder)
//
// Tools run in Python (generator/scenarios.py's World decides what each returns or raises):
// `toolCaller` calls them over HTTP, and a tool failure is thrown as `ToolFailure` for the
// framework to handle as it handles any tool error. This file imports no package, so each
// family's own node_modules (pinned by its package-lock.json) provides everything.
import { createInterface } from 'node:readline';
import { writeFileSync } from 'node:fs';

// Protocol lines carry this prefix: a library that writes to stdout cannot be mistaken for one.
const MARK = '@@faultgate ';

export class ToolFailure extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** `call(name, args)`: the scenario's tool, run by the generator; throws ToolFailure when it fails. */
export function toolCaller(url) {
  return async (name, args) => {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, args }),
    });
    const body = await r.json();
    if (!r.ok) throw new Error(`tool server: ${r.status} ${JSON.stringify(body)}`);
    if (body.error !== undefined) throw new ToolFailure(body.error);
    return body.result;
  };
}

function send(msg) {
  process.stdout.write(MARK + JSON.stringify(msg) + '\n');
}

async function seen(family) {
  await family.flush();
  return new Set(await family.traceIds());
}

function added(now, ...before) {
  return [...now].filter((t) => !before.some((b) => b.has(t))).sort();
}

export async function serve(family) {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    try {
      if (msg.op === 'init') {
        await family.init(msg);
        send({ op: 'ready' });
      } else if (msg.op === 'play') {
        const before = await seen(family);
        const invoke = await family.build(msg.scenario);
        const afterBuild = await seen(family);
        await invoke();
        const after = await seen(family);
        send({ op: 'played', built: added(afterBuild, before), ran: added(after, afterBuild, before) });
      } else if (msg.op === 'write') {
        await family.flush();
        const doc = await family.serialize();
        writeFileSync(msg.path, doc);
        send({ op: 'written' });
      } else if (msg.op === 'exit') {
        send({ op: 'bye' });
        break;
      } else {
        throw new Error(`unknown op ${msg.op}`);
      }
    } catch (e) {
      send({ op: 'error', message: String((e && e.stack) || e) });
    }
  }
  process.exit(0);
}

/**
 * Tracing into memory with the OTel JS SDK, its modules passed in (they resolve from the
 * family's own node_modules): a NodeTracerProvider registered as the global one (with its
 * AsyncLocalStorage context manager, so spans of awaited calls nest), one
 * SimpleSpanProcessor into an InMemorySpanExporter, and the family's name as service.name.
 * Returns what `serve` needs of it: flush, traceIds, serialize.
 */
export function inMemoryTracing(otel, serviceName) {
  const { NodeTracerProvider, SimpleSpanProcessor, InMemorySpanExporter, JsonTraceSerializer,
    resourceFromAttributes } = otel;
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  provider.register();
  return {
    provider,
    flush: () => provider.forceFlush(),
    traceIds: () => exporter.getFinishedSpans().map((s) => s.spanContext().traceId),
    serialize: () => JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans()),
  };
}

/** A tool's parameters (name -> "string" | "number", as `init` gives them) as a zod object, with
 *  the family's own zod passed in. */
export function zodObject(z, params) {
  return z.object(Object.fromEntries(Object.entries(params).map(([p, type]) => [p, type === 'number'
    ? z.number().describe(p) : z.string().describe(p)])));
}
