"""The JavaScript families (node.py plays them; each one's npm packages are pinned by the
package-lock.json in its js/ folder)."""
from __future__ import annotations

from .node import NodeFamily

NODE_FAMILIES = {f.name: f for f in [
    NodeFamily("vercel-ai-generate", "vercel-ai", "ai", "ai", ("--mode", "generate"),
               supports=frozenset({"parallel", "budget", "nested"}), extras={"provider": "@ai-sdk/openai"}),
    NodeFamily("vercel-ai-stream", "vercel-ai", "ai", "ai", ("--mode", "stream"),
               supports=frozenset({"parallel", "budget", "nested"}), extras={"provider": "@ai-sdk/openai"}),
    NodeFamily("langgraph-js-openinference", "langgraph-openinference", "@langchain/langgraph",
               "@arizeai/openinference-instrumentation-langchain",
               supports=frozenset({"parallel", "budget", "nested", "session"}),
               extras={"core": "@langchain/core", "model": "@langchain/openai"}),
    NodeFamily("openai-agents-js-openinference", "openai-agents-openinference", "@openai/agents",
               "@arizeai/openinference-instrumentation-openai-agents",
               supports=frozenset({"parallel", "budget", "nested", "session"})),
    NodeFamily("mastra-otel-bridge", "mastra", "@mastra/core", "@mastra/otel-bridge",
               supports=frozenset({"parallel", "budget", "nested"}), extras={"observability": "@mastra/observability",
                                                                           "node": "node"}),
]}
