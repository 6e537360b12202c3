# .data = ... swaps the memory under a leaf that a graph saved
w = torch.tensor([1.0, 2.0], requires_grad=True)
old = w.detach()
y = (w * w).sum()
w.data = torch.full((2,), 5.0)
# plain: assert old.untyped_storage().data_ptr() != w.untyped_storage().data_ptr()
# plain: assert shares_counter(old, w)
y.backward()
# plain: assert w.grad.tolist() == [10.0, 10.0]
with torch.no_grad():
    w.add_(1)
# plain: assert w.tolist() == [6.0, 6.0] and old.tolist() == [1.0, 2.0]
# plain: assert old._version == w._version == 1
