"""The AI2-THOR bridge: the `ai2thor` world backend over the real ai2thor Controller (bridge.py),
its settings (settings.py), the pinhole camera model (camera.py), and the project's headless
stand-in simulator process (standin.py: wire.py, render.py, geometry.py)."""
