# what autograd saved is not the tensor itself; in-place ops change grad_fn
x = torch.ones(2, requires_grad=True)
y = x.exp()
s = y.grad_fn._saved_result
# plain: assert s is not y and s.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
# plain: assert shares_counter(s, y) and s.grad_fn is y.grad_fn
y2 = x * 2
y2.masked_fill_(torch.tensor([True, False]), 0.0)
# plain: assert type(y2.grad_fn).__name__ == "MaskedFillBackward0"
y3 = x * 3
y3[0] = 0.0
# plain: assert type(y3.grad_fn).__name__ == "CopySlices"
