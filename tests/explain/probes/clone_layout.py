# clone keeps the layout, contiguous does not; overlapping views write one element twice
x = torch.arange(6.0).reshape(2, 3).t()
y = x.clone()
# plain: assert y.stride() == x.stride() == (1, 3) and not y.is_contiguous()
z = x.contiguous()
# plain: assert z.stride() == (2, 1) and z.is_contiguous()
base = torch.zeros(4)
v = base.as_strided((3, 2), (1, 1))
v.add_(1)
# plain: assert base.tolist() == [1.0, 2.0, 2.0, 1.0]
