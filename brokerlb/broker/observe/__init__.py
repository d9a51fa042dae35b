"""What operators watch on a broker: metrics, health, the dashboard and the load history it writes."""
