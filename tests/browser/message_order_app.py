"""A page that makes Panel and Bokeh write two messages in the order that broke CI
(tests/browser/test_message_order.py serves it; app/message_order.py explains the case).

A click holds the websocket's write lock for a moment, as the reply to a browser's message does
while it is written; then, in a callback that holds the document, a figure is put on the page
(Panel's path: postponed, the lock being busy) and its title changed (Bokeh's path).
QPVIZ_MESSAGE_ORDER=off leaves Panel's writers as Panel has them.
"""
import asyncio
import os
import sys
from pathlib import Path

import panel as pn
from bokeh.plotting import figure

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))
import message_order  # noqa: E402

if os.environ.get("QPVIZ_MESSAGE_ORDER", "on") == "on":
    message_order.enable()

#: Seconds the click keeps the write lock.
BUSY_SECONDS = 0.3

holder = pn.Column()
button = pn.widgets.Button(name="show the figure", css_classes=["qpviz-show"])


def show_figure() -> None:
    fig = figure(title="first title", height=200, width=300)
    fig.line([0, 1], [0, 1])
    holder.objects = [pn.pane.Bokeh(fig)]
    fig.title.text = "second title"


async def keep_writing(socket) -> None:
    async with socket.write_lock:
        await asyncio.sleep(BUSY_SECONDS)


async def on_click(event) -> None:
    doc = pn.state.curdoc
    for connection in doc.session_context.session._subscribed_connections:
        asyncio.ensure_future(keep_writing(connection._socket))
    doc.add_next_tick_callback(show_figure)  # runs holding the document, the lock busy


button.on_click(on_click)
pn.Column(button, holder).servable()
