"""Live GP fits for the dashboard: 1-D and 2-D data presets and the pure computations behind the GP pages."""
