"""The workspace's tool definitions, as the DashScope reference lays a workspace out."""

SYSTEM_PROMPT = "You are a tool-routing assistant. Call tools only when the request is clear."

TOOL_DEFINITIONS = [
    {
        "type": "function",
        "function": {
            "name": "query_status",
            "description": "Look up the status of an item by its identifier.",
            "parameters": {
                "type": "object",
                "properties": {"item_id": {"type": "string", "description": "Identifier of the item to query."}},
                "required": ["item_id"],
                "additionalProperties": False,
            },
        },
    },
]
