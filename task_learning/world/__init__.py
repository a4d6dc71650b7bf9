"""World backends (symbolic twin of AI2-THOR, AI2-THOR itself, a real Fetch) behind one protocol."""
