agentforge new my-agent --template minimal --provider anthropic
cd my-agent
uv sync                       # the scaffold's own "Next:" hint uses uv
uv run agentforge add module mcp
