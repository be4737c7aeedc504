"""Framework integrations: thin adapters from an agent framework's contract to sqlstore's ports.

Each framework module (``openai_agents``, ``adk``, ``langgraph``) imports its
framework and needs the matching extra (``pip install 'sqlstore[openai-agents]'``,
``'sqlstore[adk]'``, ``'sqlstore[langgraph]'``); ``import sqlstore`` never does.
The other modules here are framework-free: they map the records an integration
writes to sqlstore's domain types, so that the CLI and the viewer can show
framework sessions without importing any framework
(:mod:`sqlstore.integrations.transcripts`).
"""
