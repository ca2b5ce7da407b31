"""The agent loop (SPEC §4) and what it drives: turns, compaction, prompts, sub-agents, distillation."""
