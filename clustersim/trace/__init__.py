"""Timeline recording and Chrome/Perfetto trace export."""
