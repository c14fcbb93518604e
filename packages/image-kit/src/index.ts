export { type Rgba, decode, DecodeError, encodeJpeg, encodePng, MAX_DECODE_PIXELS } from "./codec.ts";
export { type FitResult, fitImage, type ImageFacts, type ImageLimits, targetSize } from "./fit.ts";
export { type ImageHeader, type ImageMediaType, imageHeader, sniffImage } from "./header.ts";
export { resize } from "./resize.ts";
