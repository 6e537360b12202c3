# keep what works: a running total and a list of losses that keep every graph alive
w = torch.ones(2, requires_grad=True)
total_loss = 0
losses = []
for i in range(3):
    loss = (w * i).sum()
    total_loss += loss
    # says: add `loss.item()` (a number) or `loss.detach()` instead
    losses.append(loss)
    # says: store `loss.item()` (a number) or `loss.detach()` instead
# plain: assert total_loss.grad_fn.next_functions[0][0] is not None
# plain: assert all(l.grad_fn is not None for l in losses)
