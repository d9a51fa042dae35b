"""The broker's side of the one leader: its inputs, refresh and placement, its tasks while it leads, its fencing."""
