"""From an agent's own memory to a judged corpus: pooling questions' candidates, judging them
(blind to channel and rank), agreement between judges, and the export the harness sweeps."""
