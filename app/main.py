"""The qpviz dashboard: `panel serve app` serves this script at /app (the pages: app/dashboard.py).

Bokeh runs this script once per browser session; everything that must outlive a session lives
in ordinary modules.
"""
import panel as pn

import closed_tabs
import dashboard
import inline_arrays
import message_order
import panel_offline
import server_memory
import tcp_nodelay

pn.extension("katex", sizing_mode="stretch_width")
panel_offline.enable()  # Panel's stylesheets always from this server, never its CDN
tcp_nodelay.enable()  # the server's replies reach the browser without Nagle's 40 ms waits
inline_arrays.enable()  # a change is three websocket frames, its arrays inside, not two frames per array
closed_tabs.enable()  # a tab closed mid-write drops its message (no server traceback)
message_order.enable()  # messages leave in the order they were made (none names a model not yet sent)
server_memory.limit_heap_growth()  # freed arrays go back to the system (idempotent)
pn.state.onload(dashboard.preload_later)
server_memory.freeze_long_lived()  # the imports out of the full collections' way (once per process)

dashboard.build().servable()
