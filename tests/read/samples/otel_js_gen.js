// A real OTel JS sample: an agent run recorded with @opentelemetry/sdk-trace-base's
// BasicTracerProvider and InMemorySpanExporter, written two ways: JSON.stringify of the
// ReadableSpan objects (what `JSON.stringify(exporter.getFinishedSpans())` gives), and
// the ConsoleSpanExporter's printed shape.
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, ConsoleSpanExporter } = require('@opentelemetry/sdk-trace-base');
const api = require('@opentelemetry/api');
const fs = require('fs');
const mem = new InMemorySpanExporter();
const lines = [];
const console_ = new ConsoleSpanExporter();
// ConsoleSpanExporter prints with console.dir; capture its info objects instead
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(mem)] });
const tracer = provider.getTracer('weather-agent');
const msgs = (role, parts) => JSON.stringify([{ role, parts }]);
tracer.startActiveSpan('invoke_agent weather', { attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather',
    'gen_ai.input.messages': msgs('user', [{ type: 'text', content: 'Weather in Paris?' }]) } }, (root) => {
  const ctx = api.trace.setSpan(api.context.active(), root);
  for (let i = 0; i < 3; i++) {
    const chat = tracer.startSpan('chat m', { attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.output.messages': msgs('assistant', [{ type: 'tool_call', id: `call_${i}`, name: 'get_weather', arguments: { city: 'Paris' } }]) } }, ctx);
    chat.end();
    const tool = tracer.startSpan('execute_tool get_weather', { attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.id': `call_${i}`, 'gen_ai.tool.call.arguments': '{"city": "Paris"}', 'gen_ai.tool.call.result': '{"temp": 21}' } }, ctx);
    tool.end();
  }
  const last = tracer.startSpan('chat m', { attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.response.finish_reasons': ['stop'],
    'gen_ai.output.messages': msgs('assistant', [{ type: 'text', content: '21 degrees in Paris.' }]) } }, ctx);
  last.end();
  root.setAttribute('gen_ai.output.messages', msgs('assistant', [{ type: 'text', content: '21 degrees in Paris.' }]));
  root.end();
});
const spans = mem.getFinishedSpans();
// The ReadableSpan interface, field by field (spanContext() is a method: its value is kept).
const readable = spans.map(s => ({ name: s.name, kind: s.kind, spanContext: s.spanContext(), parentSpanContext: s.parentSpanContext,
  startTime: s.startTime, endTime: s.endTime, status: s.status, attributes: s.attributes, links: s.links, events: s.events,
  duration: s.duration, ended: s.ended, resource: { attributes: s.resource.attributes }, instrumentationScope: s.instrumentationScope,
  droppedAttributesCount: s.droppedAttributesCount, droppedEventsCount: s.droppedEventsCount, droppedLinksCount: s.droppedLinksCount }));
fs.writeFileSync(process.argv[2], JSON.stringify(readable, null, 1));
fs.writeFileSync(process.argv[3], JSON.stringify(spans.map(s => console_._exportInfo(s)), null, 1));
