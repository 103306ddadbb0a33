// A typical transformation: a partner wants its own field names.
function handler(webhook) {
  const d = webhook.payload.data;
  webhook.payload = {
    order_id: d.orderId, state: d.status, amount: d.total, currency: d.currency,
    customer_email: d.customer.email, lines: d.items.length, event: webhook.eventType,
  };
  webhook.headers["x-order"] = d.orderId;
  return webhook;
}
