#!/usr/bin/python3
"""Ask an X11 window to close, as a window manager's close button does (WM_DELETE_WINDOW).

Xvfb has no window manager, so the end-to-end tests use this to close the approval dialog the
way a person would. Usage: app-close-window.py "<part of the window title>"
Exits 0 when at least one matching window was asked to close."""
import sys

from Xlib import X, display, error, protocol


def walk(win):
    yield win
    try:
        children = win.query_tree().children
    except error.XError:
        # The window went away while we looked (GTK and WebKit make short-lived ones).
        return
    for child in children:
        yield from walk(child)


def title(d, win):
    for atom in (d.intern_atom("_NET_WM_NAME"), X.NONE):
        try:
            if atom == X.NONE:
                name = win.get_wm_name()
            else:
                prop = win.get_full_property(atom, d.intern_atom("UTF8_STRING"))
                name = prop.value.decode("utf-8", "replace") if prop else None
        except Exception:
            name = None
        if name:
            return name if isinstance(name, str) else name.decode("utf-8", "replace")
    return ""


def main():
    want = sys.argv[1]
    d = display.Display()
    protocols = d.intern_atom("WM_PROTOCOLS")
    delete = d.intern_atom("WM_DELETE_WINDOW")
    closed = 0
    seen = []
    for win in walk(d.screen().root):
        name = title(d, win)
        if name:
            seen.append(name)
        if want in name:
            event = protocol.event.ClientMessage(
                window=win, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
            )
            win.send_event(event, event_mask=X.NoEventMask)
            closed += 1
    d.flush()
    d.close()
    if not closed:
        print(f"no window titled {want!r}; titles: {seen!r}", file=sys.stderr)
    sys.exit(0 if closed else 1)


if __name__ == "__main__":
    main()
