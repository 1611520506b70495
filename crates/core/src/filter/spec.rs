//! A pipeline's filter ([`FilterSpec`]): a mask, a mask per plane over it, the border and
//! the planes; which mask each plane of a format takes, what cannot run on a format, and the
//! warnings a format calls for.

use super::choices::{BorderMode, PlaneSelection};
use crate::format::{PixelFormat, PixelLayout, PlaneName};
use crate::mask::Mask;

/// A mask per plane (or channel), over the pipeline's `mask`.
pub type PlaneMasks = std::collections::BTreeMap<PlaneName, Mask>;

/// Everything an engine needs to know to filter frames.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterSpec {
    /// The mask of every plane `planes` selects and `plane_masks` does not name.
    pub mask: Mask,
    /// How samples beyond the edges are taken.
    pub border: BorderMode,
    /// Which planes `mask` filters.
    pub planes: PlaneSelection,
    /// Planes with a mask of their own; empty when one mask serves.
    pub plane_masks: PlaneMasks,
}

impl FilterSpec {
    /// One mask on the planes `planes` selects.
    pub fn uniform(mask: Mask, border: BorderMode, planes: PlaneSelection) -> FilterSpec {
        FilterSpec {
            mask,
            border,
            planes,
            plane_masks: PlaneMasks::new(),
        }
    }

    /// The mask plane `index` of a `format` frame is filtered with, `None` when it is copied:
    /// its own from `plane_masks`, else `mask` where `planes` selects it. (An interleaved
    /// plane's channels share one mask; see [`FilterSpec::problems_with`].)
    pub fn mask_for(&self, format: PixelFormat, index: usize) -> Option<&Mask> {
        let own = format
            .channel_names(index)
            .iter()
            .find_map(|name| self.plane_masks.get(name));
        own.or_else(|| self.planes.selects(format, index).then_some(&self.mask))
    }

    /// Why this filter cannot run on `format` frames: a plane it names that the format lacks
    /// (chroma names on grey frames are fine: there is nothing to filter), or channels of
    /// one interleaved plane given different masks.
    pub fn problems_with(&self, format: PixelFormat) -> Vec<String> {
        let mut problems = Vec::new();
        let planes = format.plane_shapes(2, 2).len();
        let names: Vec<PlaneName> = (0..planes)
            .flat_map(|i| format.channel_names(i).iter().copied())
            .collect();
        let lacking: Vec<&str> = self
            .plane_masks
            .keys()
            .filter(|name| !(names.contains(name) || format.layout() == PixelLayout::Gray && name.is_chroma()))
            .map(|name| name.name())
            .collect();
        if !lacking.is_empty() {
            let has: Vec<&str> = names.iter().map(|n| n.name()).collect();
            problems.push(format!(
                "plane_masks names {}, which {format} frames do not have (they have {})",
                lacking.join(", "),
                has.join(", ")
            ));
        }
        for index in 0..planes {
            let channels = format.channel_names(index);
            if channels.len() < 2 {
                continue;
            }
            let masks: Vec<Option<&Mask>> = channels.iter().map(|name| self.plane_masks.get(name)).collect();
            if masks.iter().any(|m| m.is_some()) && masks.iter().any(|m| *m != masks[0]) {
                let names: Vec<&str> = channels.iter().map(|n| n.name()).collect();
                problems.push(format!(
                    "{format} holds {} interleaved in one plane, so they take one mask: give it to all of them ({})",
                    names.join(", "),
                    if names == ["u", "v"] {
                        "uv = ...".to_string()
                    } else {
                        names
                            .iter()
                            .map(|n| format!("{n} = ..."))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ));
            }
        }
        problems
    }

    /// A format to convert `format` frames to so that this filter can run on them, at the
    /// same depth: NV12's (or P010's) interleaved U and V given different masks become planar
    /// 4:2:0 (NVDEC decodes to NV12, so per-plane chroma masks would otherwise be refused
    /// there), and packed RGB whose channels have different masks becomes planar GBR.
    pub fn planar_format_for(&self, format: PixelFormat) -> Option<PixelFormat> {
        let differ = |a: PlaneName, b: PlaneName| self.plane_masks.get(&a) != self.plane_masks.get(&b);
        let planar = match format.layout() {
            PixelLayout::SemiPlanar420 if differ(PlaneName::U, PlaneName::V) => PixelLayout::Yuv420,
            PixelLayout::Rgb | PixelLayout::Bgr
                if differ(PlaneName::R, PlaneName::G) || differ(PlaneName::G, PlaneName::B) =>
            {
                PixelLayout::Gbr
            }
            _ => return None,
        };
        PixelFormat::new(planar, format.bits())
    }

    /// One-line warnings about what this filter does to `format` frames that is likely not
    /// what was meant: a mask's own (a custom matrix that changes brightness), and a zero-sum
    /// mask without a bias on chroma, which turns the picture green.
    pub fn warnings(&self, format: PixelFormat) -> Vec<String> {
        let mut warnings = self.mask_warnings();
        warnings.extend(self.chroma_warning(format));
        warnings
    }

    /// Each mask's own warnings, once per mask, prefixed with where it is used.
    pub fn mask_warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .mask
            .warnings()
            .iter()
            .map(|w| format!("mask `{}`: {w}", self.mask.description()))
            .collect();
        for (plane, mask) in &self.plane_masks {
            warnings.extend(
                mask.warnings()
                    .iter()
                    .map(|w| format!("plane mask {plane} `{}`: {w}", mask.description())),
            );
        }
        warnings
    }

    fn chroma_warning(&self, format: PixelFormat) -> Vec<String> {
        let planes = format.plane_shapes(2, 2).len();
        let mut flat: Vec<(&str, &str)> = Vec::new();
        for index in 0..planes {
            let chroma: Vec<&str> = format
                .channel_names(index)
                .iter()
                .filter(|n| n.is_chroma())
                .map(|n| n.name())
                .collect();
            if chroma.is_empty() {
                continue;
            }
            if let Some(mask) = self.mask_for(format, index) {
                if mask.is_zero_sum() && mask.bias() == 0.0 {
                    flat.extend(chroma.into_iter().map(|c| (c, mask.description())));
                }
            }
        }
        if flat.is_empty() {
            return Vec::new();
        }
        let planes: Vec<&str> = flat.iter().map(|(plane, _)| *plane).collect();
        vec![format!(
            "`{}` sums to 0 and has no bias, so the chroma planes ({}) come out near 0 and the picture turns green; for a grey-scale edge map give chroma the neutral mask (--plane-mask uv=neutral, or plane_masks = {{ uv = \"neutral\" }}), filter luma only (--planes luma), or add bias=128",
            flat[0].1,
            planes.join(", ")
        )]
    }

    /// The planes (by the names `plane_masks` takes) whose pixels differ when `next` filters
    /// `format` frames instead of this filter: another mask, a plane filtered or no longer
    /// filtered, or another border on a plane still filtered. A mask written another way
    /// (`box`, `box:size=3`) changes nothing.
    pub fn changed_planes(&self, next: &FilterSpec, format: PixelFormat) -> Vec<PlaneName> {
        let planes = format.plane_shapes(2, 2).len();
        (0..planes)
            .filter(
                |&index| match (self.mask_for(format, index), next.mask_for(format, index)) {
                    (Some(old), Some(new)) => !old.filters_like(new) || self.border != next.border,
                    (None, None) => false,
                    _ => true,
                },
            )
            .flat_map(|index| format.channel_names(index).iter().copied())
            .collect()
    }

    /// The `plane_masks` that stand where `mask` would apply (planes `planes` selects), in
    /// plane order: `mask` alone cannot change those planes.
    pub fn planes_masked_over(&self, format: PixelFormat) -> Vec<PlaneName> {
        let planes = format.plane_shapes(2, 2).len();
        (0..planes)
            .filter(|&index| self.planes.selects(format, index))
            .flat_map(|index| format.channel_names(index).iter().copied())
            .filter(|name| self.plane_masks.contains_key(name))
            .collect()
    }

    /// Whether `mask` filters no plane of `format` frames: every plane it would take has a
    /// plane mask of its own (or `planes` selects none).
    pub fn mask_unused(&self, format: PixelFormat) -> bool {
        let planes = format.plane_shapes(2, 2).len();
        (0..planes).all(|index| {
            !self.planes.selects(format, index)
                || format
                    .channel_names(index)
                    .iter()
                    .any(|name| self.plane_masks.contains_key(name))
        })
    }

    /// The masks in words: `edge` or `y: edge, u: neutral, v: neutral` (planes not named
    /// follow `mask` and `planes`).
    pub fn description(&self) -> String {
        if self.plane_masks.is_empty() {
            return self.mask.description().to_string();
        }
        let mut parts: Vec<String> = self
            .plane_masks
            .iter()
            .map(|(name, mask)| format!("{name}: {}", mask.description()))
            .collect();
        parts.push(format!("others: {} on {}", self.mask.description(), self.planes));
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(spec: &str) -> Mask {
        Mask::from_spec(spec).expect("a valid SPEC")
    }

    fn with_planes(base: &str, planes: &[(PlaneName, &str)]) -> FilterSpec {
        FilterSpec {
            plane_masks: planes.iter().map(|(name, spec)| (*name, mask(spec))).collect(),
            ..FilterSpec::uniform(mask(base), BorderMode::Reflect, PlaneSelection::All)
        }
    }

    #[test]
    fn a_plane_named_takes_its_own_mask_and_the_others_follow_mask_and_planes() {
        let filter = FilterSpec {
            planes: PlaneSelection::Luma,
            ..with_planes("box", &[(PlaneName::V, "sharpen")])
        };
        let described = |index| {
            filter
                .mask_for(PixelFormat::YUV420P, index)
                .map(|m| m.description().to_string())
        };
        assert_eq!(described(0).as_deref(), Some("box"));
        assert_eq!(described(1), None, "u: not selected, not named");
        assert_eq!(described(2).as_deref(), Some("sharpen"));
        assert_eq!(
            filter.problems_with(PixelFormat::NV12).len(),
            1,
            "nv12's interleaved uv cannot take v's mask alone"
        );
    }

    #[test]
    fn interleaved_channels_need_one_mask_and_absent_planes_are_named() {
        let split = with_planes("identity", &[(PlaneName::U, "edge"), (PlaneName::V, "box")]);
        assert!(split.problems_with(PixelFormat::YUV420P).is_empty());
        let problems = split.problems_with(PixelFormat::NV12);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("uv = ..."), "{problems:?}");
        let both = with_planes("identity", &[(PlaneName::U, "edge"), (PlaneName::V, "edge")]);
        assert!(both.problems_with(PixelFormat::NV12).is_empty());
        assert!(
            both.problems_with(PixelFormat::GRAY8).is_empty(),
            "grey has no chroma to filter"
        );
        let rgb_on_yuv = with_planes("identity", &[(PlaneName::R, "box")]);
        let problems = rgb_on_yuv.problems_with(PixelFormat::YUV444P);
        assert!(
            problems[0].contains("names r, which yuv444p frames do not have (they have y, u, v)"),
            "{problems:?}"
        );
        let one_channel = with_planes("identity", &[(PlaneName::G, "box")]);
        assert_eq!(
            one_channel.problems_with(PixelFormat::RGB24).len(),
            1,
            "g alone on packed rgb"
        );
    }

    #[test]
    fn packed_rgb_with_different_channel_masks_becomes_planar_gbr() {
        let one_channel = with_planes("identity", &[(PlaneName::G, "box")]);
        assert_eq!(
            one_channel.planar_format_for(PixelFormat::RGB24),
            Some(PixelFormat::GBRP)
        );
        let rgb48 = PixelFormat::new(PixelLayout::Rgb, 16).unwrap();
        assert_eq!(
            one_channel.planar_format_for(rgb48),
            PixelFormat::new(PixelLayout::Gbr, 16)
        );
        assert!(one_channel.problems_with(PixelFormat::GBRP).is_empty());
        let all_three = with_planes(
            "identity",
            &[(PlaneName::R, "box"), (PlaneName::G, "box"), (PlaneName::B, "box")],
        );
        assert_eq!(
            all_three.planar_format_for(PixelFormat::BGR24),
            None,
            "one mask: packed as it is"
        );
    }

    #[test]
    fn nv12_with_two_chroma_masks_becomes_planar() {
        let split = with_planes("identity", &[(PlaneName::U, "edge"), (PlaneName::V, "box")]);
        assert_eq!(split.planar_format_for(PixelFormat::NV12), Some(PixelFormat::YUV420P));
        assert_eq!(split.planar_format_for(PixelFormat::YUV420P), None);
        assert_eq!(
            split.planar_format_for(PixelFormat::P010),
            PixelFormat::new(PixelLayout::Yuv420, 10),
            "p010 keeps its depth"
        );
        let both = with_planes("identity", &[(PlaneName::U, "edge"), (PlaneName::V, "edge")]);
        assert_eq!(
            both.planar_format_for(PixelFormat::NV12),
            None,
            "one mask for uv: nv12 as it is"
        );
    }

    #[test]
    fn a_switch_names_the_planes_whose_pixels_it_changes() {
        let names = |planes: Vec<PlaneName>| planes.iter().map(|p| p.name()).collect::<Vec<_>>().join(",");
        let yuv = PixelFormat::YUV420P;
        let boxed = FilterSpec::uniform(mask("box"), BorderMode::Reflect, PlaneSelection::All);
        let sharpen = FilterSpec::uniform(mask("sharpen"), BorderMode::Reflect, PlaneSelection::All);
        assert_eq!(names(boxed.changed_planes(&sharpen, yuv)), "y,u,v");
        let same_numbers = FilterSpec::uniform(mask("box:size=3"), BorderMode::Reflect, PlaneSelection::All);
        assert_eq!(names(boxed.changed_planes(&same_numbers, yuv)), "", "box is box:size=3");
        let luma = FilterSpec {
            planes: PlaneSelection::Luma,
            ..boxed.clone()
        };
        assert_eq!(names(boxed.changed_planes(&luma, yuv)), "u,v", "chroma is copied now");
        let wrapped = FilterSpec {
            border: BorderMode::Wrap,
            ..luma.clone()
        };
        assert_eq!(
            names(luma.changed_planes(&wrapped, yuv)),
            "y",
            "copied planes have no border"
        );
        // Every plane has a mask of its own: a new `mask` reaches none of them.
        let per_plane = with_planes(
            "box",
            &[
                (PlaneName::Y, "edge"),
                (PlaneName::U, "neutral"),
                (PlaneName::V, "neutral"),
            ],
        );
        let new_mask = FilterSpec {
            mask: mask("sharpen"),
            ..per_plane.clone()
        };
        assert_eq!(names(per_plane.changed_planes(&new_mask, yuv)), "");
        assert!(per_plane.mask_unused(yuv));
        assert_eq!(names(per_plane.planes_masked_over(yuv)), "y,u,v");
        // NV12's interleaved plane is both u and v.
        assert_eq!(names(boxed.changed_planes(&luma, PixelFormat::NV12)), "u,v");
        let chroma_only = with_planes("box", &[(PlaneName::U, "edge"), (PlaneName::V, "edge")]);
        assert!(!chroma_only.mask_unused(yuv), "mask still filters y");
        assert_eq!(names(chroma_only.planes_masked_over(yuv)), "u,v");
    }

    #[test]
    fn zero_sum_masks_on_chroma_without_bias_are_warned_about_once() {
        let edge = FilterSpec::uniform(mask("edge"), BorderMode::Reflect, PlaneSelection::All);
        let warnings = edge.warnings(PixelFormat::YUV420P);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("(u, v)") && warnings[0].contains("uv=neutral"),
            "{warnings:?}"
        );
        assert!(edge.warnings(PixelFormat::GRAY8).is_empty());
        assert!(edge.warnings(PixelFormat::RGB24).is_empty(), "rgb has no chroma");
        let grey_map = with_planes("edge", &[(PlaneName::U, "neutral"), (PlaneName::V, "neutral")]);
        assert!(grey_map.warnings(PixelFormat::YUV420P).is_empty());
        let biased = FilterSpec::uniform(mask("edge:bias=128"), BorderMode::Reflect, PlaneSelection::All);
        assert!(biased.warnings(PixelFormat::NV12).is_empty());
        let luma = FilterSpec::uniform(mask("laplacian"), BorderMode::Reflect, PlaneSelection::Luma);
        assert!(luma.warnings(PixelFormat::YUV420P).is_empty());
    }
}
