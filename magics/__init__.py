"""%pcmem IPython magics and widgets (installed as powercontext.magics)."""
