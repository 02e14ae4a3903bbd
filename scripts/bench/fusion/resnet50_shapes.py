"""The trainable parameters of torchvision's ResNet-50 (1000 classes), in
`model.named_parameters()` order, derived from the architecture so that the
benchmark needs no torchvision: a 7x7 stem, four stages of 3, 4, 6 and 3
bottleneck blocks (1x1, 3x3, 1x1 convolutions, each followed by a batch norm
with a weight and a bias; the first block of a stage adds a 1x1 downsample
convolution and its batch norm), then the 2048 -> 1000 classifier.

    python3 resnet50_shapes.py      # checks: 161 tensors, 25,557,032 values
"""

from typing import List, Tuple

Shape = Tuple[int, ...]

TENSORS = 161
PARAMETERS = 25_557_032
STAGES = ((64, 3), (128, 4), (256, 6), (512, 3))  # (width, blocks)
EXPANSION = 4
CLASSES = 1000


def _conv_bn(prefix: str, conv: str, bn: str, shape: Shape):
    return [(f"{prefix}{conv}.weight", shape),
            (f"{prefix}{bn}.weight", (shape[0],)),
            (f"{prefix}{bn}.bias", (shape[0],))]


def parameter_shapes() -> List[Tuple[str, Shape]]:
    """(name, shape) of every parameter, as named_parameters() lists them."""
    params = _conv_bn("", "conv1", "bn1", (64, 3, 7, 7))
    inplanes = 64
    for stage, (width, blocks) in enumerate(STAGES, start=1):
        out = width * EXPANSION
        for block in range(blocks):
            p = f"layer{stage}.{block}."
            params += _conv_bn(p, "conv1", "bn1", (width, inplanes, 1, 1))
            params += _conv_bn(p, "conv2", "bn2", (width, width, 3, 3))
            params += _conv_bn(p, "conv3", "bn3", (out, width, 1, 1))
            if block == 0:
                params += _conv_bn(p, "downsample.0", "downsample.1",
                                   (out, inplanes, 1, 1))
            inplanes = out
    params += [("fc.weight", (CLASSES, inplanes)), ("fc.bias", (CLASSES,))]
    return params


def shapes() -> List[Shape]:
    return [shape for _, shape in parameter_shapes()]


def elements(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


if __name__ == "__main__":
    got = shapes()
    total = sum(elements(s) for s in got)
    print(f"{len(got)} tensors, {total:,} parameters, {4 * total:,} bytes")
    assert len(got) == TENSORS, len(got)
    assert total == PARAMETERS, total
