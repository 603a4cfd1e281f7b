"""The workspace's tools and prompt, shared by its rollout and reward processors."""

SYSTEM_PROMPT = "You are a tool-routing assistant. Call query_status when asked about an item."

TOOL_DEFINITIONS = [
    {
        "type": "function",
        "function": {
            "name": "query_status",
            "description": "Look up the status of an item by its identifier.",
            "parameters": {
                "type": "object",
                "properties": {"item_id": {"type": "string"}},
                "required": ["item_id"],
                "additionalProperties": False,
            },
        },
    }
]
