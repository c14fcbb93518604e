export { DecodeError, decode, encodeJpeg, encodePng, MAX_DECODE_PIXELS, type Rgba } from "./codec.ts";
export { type FitResult, fitImage, type ImageFacts, type ImageLimits, targetSize } from "./fit.ts";
export { type ImageHeader, type ImageMediaType, imageHeader, sniffImage } from "./header.ts";
export { resize } from "./resize.ts";
