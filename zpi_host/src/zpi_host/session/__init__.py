"""Sessions: ``create_session`` assembles one (options, settings, plugins, model, tools,
resources, prompt); ``AgentSession`` is what embedding programs call; its view and ports are
what plugins read and use; sub-agents are child sessions."""
